//go:build cgo && !nolibmariadb

package libmariadb

/*
#cgo CFLAGS: -I/usr/include/mariadb -I/usr/include/mysql
#cgo LDFLAGS: -lmariadb
#include <stdlib.h>
#include <string.h>
#include <mysql.h>

enum { FB_MAX_ARGS = 16, FB_ARG_BYTES = 8192 };
enum { FB_INT = 0, FB_FLOAT = 1, FB_STRING = 2 };

// One prepared statement and its result binding, made once at prepare.
typedef struct {
	MYSQL_STMT *st;
	unsigned int ncols;
	MYSQL_BIND *res;          // ncols result binds
	long long *ints;          // integer columns' values
	char **bufs;              // text columns' buffers
	unsigned long *lens;      // the fetched lengths
	my_bool *nulls;           // the fetched NULL flags
	char *isint;              // 1: the column is bound as an integer
} fb_stmt;

// The pending arguments of the next execution, written from Go.
typedef struct {
	int n;
	char kind[FB_MAX_ARGS];
	int ints[FB_MAX_ARGS];
	float floats[FB_MAX_ARGS];
	unsigned long off[FB_MAX_ARGS], len[FB_MAX_ARGS];
	char bytes[FB_ARG_BYTES];
	unsigned long used;
	MYSQL_BIND bind[FB_MAX_ARGS];
} fb_args;

static void fb_free_stmt(fb_stmt *s) {
	if (s->st) mysql_stmt_close(s->st);
	if (s->bufs) {
		for (unsigned int i = 0; i < s->ncols; i++) free(s->bufs[i]);
	}
	free(s->res); free(s->ints); free(s->bufs); free(s->lens); free(s->nulls); free(s->isint);
	memset(s, 0, sizeof *s);
}

static int fb_is_int(enum enum_field_types t) {
	return t == MYSQL_TYPE_TINY || t == MYSQL_TYPE_SHORT || t == MYSQL_TYPE_LONG ||
	       t == MYSQL_TYPE_INT24 || t == MYSQL_TYPE_LONGLONG || t == MYSQL_TYPE_YEAR;
}

// fb_prepare prepares text on m into s and binds its result columns:
// integers as 8-byte integers, everything else as text in a buffer the
// size of the column. It returns 0, or 1 with the error left on s->st (or
// s->st NULL when out of memory).
static int fb_prepare(MYSQL *m, fb_stmt *s, const char *text, unsigned long len) {
	memset(s, 0, sizeof *s);
	s->st = mysql_stmt_init(m);
	if (!s->st) return 1;
	if (mysql_stmt_prepare(s->st, text, len)) return 1;
	MYSQL_RES *meta = mysql_stmt_result_metadata(s->st);
	if (!meta) return 0; // no result set: INSERT, UPDATE, DELETE
	unsigned int n = mysql_num_fields(meta);
	MYSQL_FIELD *f = mysql_fetch_fields(meta);
	s->ncols = n;
	s->res = calloc(n, sizeof *s->res);
	s->ints = calloc(n, sizeof *s->ints);
	s->bufs = calloc(n, sizeof *s->bufs);
	s->lens = calloc(n, sizeof *s->lens);
	s->nulls = calloc(n, sizeof *s->nulls);
	s->isint = calloc(n, 1);
	int ok = s->res && s->ints && s->bufs && s->lens && s->nulls && s->isint;
	for (unsigned int i = 0; ok && i < n; i++) {
		MYSQL_BIND *b = &s->res[i];
		b->length = &s->lens[i];
		b->is_null = &s->nulls[i];
		if (fb_is_int(f[i].type)) {
			s->isint[i] = 1;
			b->buffer_type = MYSQL_TYPE_LONGLONG;
			b->buffer = &s->ints[i];
		} else {
			unsigned long size = f[i].length + 1;
			if (size < 64) size = 64; // DECIMAL and aggregates may report less than their text
			s->bufs[i] = malloc(size);
			ok = s->bufs[i] != NULL;
			b->buffer_type = MYSQL_TYPE_STRING;
			b->buffer = s->bufs[i];
			b->buffer_length = size;
		}
	}
	mysql_free_result(meta);
	return ok ? 0 : 1;
}

// fb_execute binds the pending arguments (as tpcc_start binds its C
// variables), executes, and for a statement with a result set stores the
// result and binds its columns. It returns 0 or 1 (error on the statement).
static int fb_execute(fb_stmt *s, fb_args *a) {
	memset(a->bind, 0, sizeof(MYSQL_BIND) * a->n);
	for (int i = 0; i < a->n; i++) {
		MYSQL_BIND *b = &a->bind[i];
		switch (a->kind[i]) {
		case FB_INT:
			b->buffer_type = MYSQL_TYPE_LONG;
			b->buffer = &a->ints[i];
			break;
		case FB_FLOAT:
			b->buffer_type = MYSQL_TYPE_FLOAT;
			b->buffer = &a->floats[i];
			break;
		default:
			b->buffer_type = MYSQL_TYPE_STRING;
			b->buffer = a->bytes + a->off[i];
			b->buffer_length = a->len[i];
			b->length = &a->len[i];
		}
	}
	int n = a->n;
	a->n = 0;
	a->used = 0;
	if (n > 0 && mysql_stmt_bind_param(s->st, a->bind)) return 1;
	if (mysql_stmt_execute(s->st)) return 1;
	if (s->ncols == 0) return 0;
	if (mysql_stmt_store_result(s->st)) return 1;
	if (mysql_stmt_bind_result(s->st, s->res)) {
		mysql_stmt_free_result(s->st);
		return 1;
	}
	return 0;
}

// fb_fetch is mysql_stmt_fetch with a truncated column counted as fetched
// (as tpcc_start does): 0 a row, 1 an error, MYSQL_NO_DATA the end. For a
// row, out[i] is text column i's length, or -1 for NULL in any column.
static int fb_fetch(fb_stmt *s, long long *out) {
	int rc = mysql_stmt_fetch(s->st);
	if (rc == MYSQL_DATA_TRUNCATED) rc = 0;
	if (rc != 0) return rc;
	for (unsigned int i = 0; i < s->ncols; i++) {
		unsigned long len = s->lens[i];
		if (len > s->res[i].buffer_length) len = s->res[i].buffer_length; // truncated
		out[i] = s->nulls[i] ? -1 : (long long)len;
	}
	return 0;
}

// fb_connect opens m: over the unix socket when socket is set, else TCP
// to host:port (never the socket a host of "localhost" would mean).
static MYSQL *fb_connect(MYSQL *m, const char *host, const char *user, const char *pw, const char *db,
		unsigned int port, const char *socket, unsigned int timeout) {
	unsigned int proto = socket ? MYSQL_PROTOCOL_SOCKET : MYSQL_PROTOCOL_TCP;
	mysql_options(m, MYSQL_OPT_PROTOCOL, &proto);
	mysql_options(m, MYSQL_OPT_CONNECT_TIMEOUT, &timeout);
	return mysql_real_connect(m, socket ? NULL : host, user, pw, db, port, socket, 0);
}
*/
import "C"

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/go-sql-driver/mysql"

	"flushbench/tpcc/internal/mysqlwire"
)

// Available says this build has the C client.
const Available = true

// libraryInit runs mysql_library_init once, before the first connection:
// the library's global state must not be set up by two threads at once.
var libraryInit sync.Once

// connectTimeout is the Go client's connect timeout (mysqlwire), in seconds.
const connectTimeout = 10

// Opener opens Sessions to one schema (mysqlwire.SessionOpener).
type Opener struct {
	Conn mysqlwire.ConnOpts // with the schema in DB
}

// NewOpener returns the opener of connections to schema db with o's
// address and credentials.
func NewOpener(o *mysqlwire.ConnOpts, db string) (mysqlwire.SessionOpener, error) {
	c := *o
	c.DB = db
	return Opener{Conn: c}, nil
}

// ThreadPerConnection is true: each connection's thread blocks in the
// library's read, as each tpcc_start thread does.
func (Opener) ThreadPerConnection() bool { return true }

// Open connects with autocommit off (tpcc_start's mysql_autocommit(0)) and
// prepares texts.
func (op Opener) Open(ctx context.Context, texts []string) (mysqlwire.PreparedSession, error) {
	libraryInit.Do(func() { C.mysql_library_init(0, nil, nil) })
	s := &Session{}
	s.m = C.mysql_init(nil)
	if s.m == nil {
		return nil, fmt.Errorf("libmariadb: mysql_init: out of memory")
	}
	if err := s.connect(&op.Conn); err != nil {
		C.mysql_close(s.m)
		return nil, err
	}
	s.args = (*C.fb_args)(C.calloc(1, C.sizeof_fb_args))
	s.stmts = (*[maxStatements]C.fb_stmt)(C.calloc(maxStatements, C.sizeof_fb_stmt))[:0:maxStatements]
	if s.args == nil || len(texts) > maxStatements {
		s.Close()
		return nil, fmt.Errorf("libmariadb: cannot set up %d statements", len(texts))
	}
	for _, t := range texts {
		if err := s.prepare(t); err != nil {
			s.Close()
			return nil, fmt.Errorf("preparing %q: %w", t, err)
		}
	}
	return s, nil
}

// maxStatements bounds the statements one Session prepares.
const maxStatements = 64

// Session is one connection of the C library and its prepared statements
// (mysqlwire.PreparedSession). It must be driven from one goroutine.
type Session struct {
	m     *C.MYSQL
	args  *C.fb_args
	stmts []C.fb_stmt
	rows  []rows // per statement: the result Query returns
	row   [16]driver.Value
	// state is idle, inCall while a call into the library is under way,
	// or closed. Close from another goroutine (a run giving up a hung
	// connection) leaves a connection in a call alone rather than free it
	// under the call; a call after Close fails.
	state atomic.Int32
}

const (
	idle int32 = iota
	inCall
	closed
)

// errClosed is a call on a closed Session.
var errClosed = errors.New("libmariadb: session closed")

// enter marks a call into the library, or fails if the session is closed.
func (s *Session) enter() bool { return s.state.CompareAndSwap(idle, inCall) }

// leave ends the call enter began.
func (s *Session) leave() { s.state.Store(idle) }

// connect runs mysql_real_connect and mysql_autocommit(0).
func (s *Session) connect(o *mysqlwire.ConnOpts) error {
	cs := func(v string) *C.char {
		if v == "" {
			return nil
		}
		return C.CString(v)
	}
	host, user, pw, db, sock := cs(o.Host), cs(o.User), cs(o.Password), cs(o.DB), cs(o.Socket)
	defer func() {
		for _, p := range []*C.char{host, user, pw, db, sock} {
			C.free(unsafe.Pointer(p))
		}
	}()
	if C.fb_connect(s.m, host, user, pw, db, C.uint(o.Port), sock, connectTimeout) == nil {
		return connError(s.m)
	}
	if C.mysql_autocommit(s.m, 0) != 0 {
		return connError(s.m)
	}
	return nil
}

// prepare adds statement len(s.stmts).
func (s *Session) prepare(text string) error {
	s.stmts = s.stmts[:len(s.stmts)+1]
	st := &s.stmts[len(s.stmts)-1]
	ct := C.CString(text)
	defer C.free(unsafe.Pointer(ct))
	if C.fb_prepare(s.m, st, ct, C.ulong(len(text))) != 0 {
		if st.st == nil {
			return connError(s.m)
		}
		return stmtError(st.st)
	}
	s.rows = append(s.rows, newRows(s, st))
	return nil
}

// rows is one statement's open result (driver.Rows): Go views of the C
// buffers its columns are fetched into.
type rows struct {
	s     *Session
	st    *C.fb_stmt
	isInt []C.char
	ints  []int64
	text  [][]byte  // each text column's whole buffer
	lens  [16]int64 // per fetched row: text length, -1 for NULL
}

// newRows views statement st's result buffers from Go.
func newRows(s *Session, st *C.fb_stmt) rows {
	r := rows{s: s, st: st}
	n := int(st.ncols)
	if n == 0 {
		return r
	}
	if n > len(r.lens) {
		panic("libmariadb: a statement with more than 16 columns")
	}
	r.isInt = unsafe.Slice(st.isint, n)
	r.ints = unsafe.Slice((*int64)(unsafe.Pointer(st.ints)), n)
	bufs, binds := unsafe.Slice(st.bufs, n), unsafe.Slice(st.res, n)
	r.text = make([][]byte, n)
	for i, b := range bufs {
		if b != nil {
			r.text[i] = unsafe.Slice((*byte)(unsafe.Pointer(b)), binds[i].buffer_length)
		}
	}
	return r
}

// Columns is not used by the workload.
func (r *rows) Columns() []string { return nil }

// Close frees the stored result (mysql_stmt_free_result).
func (r *rows) Close() error {
	if !r.s.enter() {
		return errClosed
	}
	C.mysql_stmt_free_result(r.st.st)
	r.s.leave()
	return nil
}

// Next fetches a row into dest (len(dest) <= the statement's columns):
// int64 for integer columns, []byte into the C buffer for the others, nil
// for NULL; io.EOF at the end.
func (r *rows) Next(dest []driver.Value) error {
	if !r.s.enter() {
		return errClosed
	}
	rc := C.fb_fetch(r.st, (*C.longlong)(unsafe.Pointer(&r.lens[0])))
	r.s.leave()
	switch rc {
	case 0:
	case C.MYSQL_NO_DATA:
		return io.EOF
	default:
		return stmtError(r.st.st)
	}
	for i := range dest {
		dest[i] = columnValue(r.isInt[i] != 0, r.ints[i], r.text[i], r.lens[i])
	}
	return nil
}

// Close closes the statements and the connection, unless a call is under
// way in another goroutine (see state).
func (s *Session) Close() {
	if !s.state.CompareAndSwap(idle, closed) {
		return
	}
	for i := range s.stmts {
		C.fb_free_stmt(&s.stmts[i])
	}
	s.stmts = nil
	if s.m != nil {
		C.mysql_close(s.m)
		s.m = nil
	}
	C.free(unsafe.Pointer(s.args))
	s.args = nil
}

// Int appends an integer argument, bound as a 4-byte MYSQL_TYPE_LONG.
func (s *Session) Int(v int) mysqlwire.PreparedSession {
	a := s.args
	a.kind[a.n] = C.FB_INT
	a.ints[a.n] = C.int(v)
	a.n++
	return s
}

// Float appends a float argument, bound as a 4-byte MYSQL_TYPE_FLOAT.
func (s *Session) Float(v float64) mysqlwire.PreparedSession {
	a := s.args
	a.kind[a.n] = C.FB_FLOAT
	a.floats[a.n] = C.float(v)
	a.n++
	return s
}

// Bytes appends a text argument (MYSQL_TYPE_STRING), copied into the
// arguments' C buffer (C memory may not keep Go pointers).
func (s *Session) Bytes(v []byte) mysqlwire.PreparedSession {
	a := s.args
	buf := unsafe.Slice((*byte)(unsafe.Pointer(&a.bytes[0])), C.FB_ARG_BYTES)
	if int(a.used)+len(v) > len(buf) {
		// The workload's text arguments total well under 1 KiB.
		panic("libmariadb: text arguments exceed the argument buffer")
	}
	n := copy(buf[a.used:], v)
	a.kind[a.n] = C.FB_STRING
	a.off[a.n] = a.used
	a.len[a.n] = C.ulong(n)
	a.used += C.ulong(n)
	a.n++
	return s
}

// execute runs statement id with the pending arguments.
func (s *Session) execute(id int) error {
	if !s.enter() {
		return errClosed
	}
	st := &s.stmts[id]
	rc := C.fb_execute(st, s.args)
	s.leave()
	if rc != 0 {
		return stmtError(st.st)
	}
	return nil
}

// Exec runs statement id and discards its result.
func (s *Session) Exec(id int) error { return s.execute(id) }

// Query runs statement id; its rows are read with Next and released with
// Close (mysql_stmt_free_result).
func (s *Session) Query(id int) (driver.Rows, error) {
	if err := s.execute(id); err != nil {
		return nil, err
	}
	return &s.rows[id], nil
}

// Next fetches the next row of rows and converts its first n columns.
func (s *Session) Next(r driver.Rows, n int) (bool, error) {
	err := r.Next(s.row[:n])
	if err == io.EOF {
		return false, nil
	}
	return err == nil, err
}

// Values is the row the last Next read.
func (s *Session) Values(n int) []driver.Value { return s.row[:n] }

// QueryOne runs statement id and hands its first row to use.
func (s *Session) QueryOne(id, n int, what string, use func(row []driver.Value)) error {
	r, err := s.Query(id)
	if err != nil {
		return err
	}
	return mysqlwire.QueryOneRow(s, r, n, what, use)
}

// Commit is mysql_commit (the text COMMIT).
func (s *Session) Commit() error {
	if !s.enter() {
		return errClosed
	}
	rc := C.mysql_commit(s.m)
	s.leave()
	if rc != 0 {
		return connError(s.m)
	}
	return nil
}

// Rollback is mysql_rollback (the text ROLLBACK).
func (s *Session) Rollback() error {
	if !s.enter() {
		return errClosed
	}
	rc := C.mysql_rollback(s.m)
	s.leave()
	if rc != 0 {
		return connError(s.m)
	}
	return nil
}

// connError is the connection's last error as go-sql-driver's error type,
// so that mysqlwire's classification (IsConnLost, IsRetryable, Explain)
// applies to both clients alike.
func connError(m *C.MYSQL) error {
	return newError(uint16(C.mysql_errno(m)), C.GoString(C.mysql_sqlstate(m)), C.GoString(C.mysql_error(m)))
}

// stmtError is a statement's last error (see connError).
func stmtError(st *C.MYSQL_STMT) error {
	return newError(uint16(C.mysql_stmt_errno(st)), C.GoString(C.mysql_stmt_sqlstate(st)), C.GoString(C.mysql_stmt_error(st)))
}

// newError builds the error of number n; a failure without a number (out
// of memory in the library) still is an error.
func newError(n uint16, state, msg string) error {
	if msg == "" {
		msg = "libmariadb error " + strconv.Itoa(int(n))
	}
	e := &mysql.MySQLError{Number: n, Message: msg}
	copy(e.SQLState[:], state)
	return e
}
