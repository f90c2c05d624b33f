package mysqlwire

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/go-sql-driver/mysql"
)

// Session is one client connection driven below database/sql: the
// go-sql-driver driver.Conn and its server-side prepared statements, called
// directly. database/sql adds per call a connection lock, argument
// conversion into NamedValues, a Stmt-per-connection lookup and copies in
// Scan; at ~84 round trips per New-Order (tpcc-mysql mode) that overhead is
// a large part of the client's CPU. The driver's own Stmt.Exec/Query take
// []driver.Value as is, and row values that are []byte point into the
// driver's read buffer (valid until the next call on the Session).
type Session struct {
	conn  driver.Conn
	q     driver.Execer //nolint:staticcheck // the non-context form skips the driver's cancel watcher
	stmts []driver.Stmt
	args  []driver.Value
	// Row holds the columns Next and QueryOne read.
	Row [16]driver.Value
}

// OpenSession connects with c and prepares texts (statement i is texts[i]),
// once per connection as tpcc_start does.
func OpenSession(ctx context.Context, c driver.Connector, texts []string) (*Session, error) {
	dc, err := c.Connect(ctx)
	if err != nil {
		return nil, err
	}
	q, ok := dc.(driver.Execer) //nolint:staticcheck
	if !ok {
		dc.Close()
		return nil, errors.New("the MySQL driver connection does not implement Exec")
	}
	s := &Session{conn: dc, q: q, args: make([]driver.Value, 0, 16)}
	for _, t := range texts {
		st, err := dc.Prepare(t)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("preparing %q: %w", t, err)
		}
		s.stmts = append(s.stmts, st)
	}
	return s, nil
}

// Close closes the statements and the connection.
func (s *Session) Close() {
	for _, st := range s.stmts {
		st.Close()
	}
	s.conn.Close()
}

// Int, Bytes and Float append an argument; the next exec or query consumes them.
func (s *Session) Int(v int) PreparedSession       { s.args = append(s.args, int64(v)); return s }
func (s *Session) Bytes(v []byte) PreparedSession  { s.args = append(s.args, v); return s }
func (s *Session) Float(v float64) PreparedSession { s.args = append(s.args, v); return s }

// Exec runs statement id with the pending arguments and discards the result.
func (s *Session) Exec(id int) error {
	_, err := s.stmts[id].Exec(s.args) //nolint:staticcheck
	s.args = s.args[:0]
	return err
}

// Query runs statement id with the pending arguments; read it with Next and
// always close it.
func (s *Session) Query(id int) (driver.Rows, error) {
	rows, err := s.stmts[id].Query(s.args) //nolint:staticcheck
	s.args = s.args[:0]
	return rows, err
}

// Next reads the next row's n columns into s.Row; false at the end.
func (s *Session) Next(rows driver.Rows, n int) (bool, error) {
	err := rows.Next(s.Row[:n])
	if err == io.EOF {
		return false, nil
	}
	return err == nil, err
}

// Values is the row the last successful Next read (its first n columns).
func (s *Session) Values(n int) []driver.Value { return s.Row[:n] }

// ErrNoRow is returned when a statement that must return a row returned
// none; like any error in tpcc-mysql mode it rolls back and retries.
type ErrNoRow struct{ What string }

func (e ErrNoRow) Error() string { return "no row returned by " + e.What }

// QueryOne runs statement id, reads its first row's n columns into s.Row and
// hands them to use before the remaining rows are drained (the []byte values
// are only valid until then). A missing row is ErrNoRow.
func (s *Session) QueryOne(id, n int, what string, use func(row []driver.Value)) error {
	rows, err := s.Query(id)
	if err != nil {
		return err
	}
	return QueryOneRow(s, rows, n, what, use)
}

// QueryOneRow is QueryOne after the query: it reads the first row of rows
// into use, closes rows and turns a missing row into ErrNoRow. Both
// clients' sessions share it.
func QueryOneRow(s PreparedSession, rows driver.Rows, n int, what string, use func(row []driver.Value)) error {
	ok, err := s.Next(rows, n)
	if ok && use != nil {
		use(s.Values(n))
	}
	if cerr := rows.Close(); err == nil {
		err = cerr
	}
	if err == nil && !ok {
		err = ErrNoRow{what}
	}
	return err
}

// Commit and Rollback are text COMMIT / ROLLBACK, as mysql_commit and
// mysql_rollback send them.
func (s *Session) Commit() error {
	_, err := s.q.Exec("COMMIT", nil)
	return err
}

// Rollback is the text ROLLBACK.
func (s *Session) Rollback() error {
	_, err := s.q.Exec("ROLLBACK", nil)
	return err
}

// AsInt converts an integer column value (int64, or decimal text).
func AsInt(v driver.Value) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case []byte:
		n, _ := strconv.ParseInt(string(x), 10, 64)
		return n
	case float64:
		return int64(x)
	}
	return 0
}

// AsFloat converts a DECIMAL (text) or numeric value to float64, as
// tpcc-mysql binds money and rates into C floats.
func AsFloat(v driver.Value) float64 {
	switch x := v.(type) {
	case []byte:
		return float64(ParseFixed(x, 4)) / 1e4
	case float64:
		return x
	case float32:
		return float64(x)
	case int64:
		return float64(x)
	}
	return 0
}

// NewConnector builds the driver connector for the Session's connections:
// autocommit off once per Session (tpcc_start's mysql_autocommit(0)), over
// the chosen transport.
func NewConnector(o *ConnOpts, db string, t Transport) (driver.Connector, error) {
	c := *o
	c.DB = db
	cfg := c.config(true, map[string]string{"autocommit": "0"})
	if t == TransportBlocking {
		cfg.DialFunc = dialBlocking
	}
	return mysql.NewConnector(cfg)
}
