package mysqlwire

import (
	"context"
	"database/sql/driver"
)

// Client names the code that carries tpcc-mysql mode's statements to the
// server (tpcc run --client).
type Client string

const (
	// ClientGo is Session: go-sql-driver's connection driven below
	// database/sql, over a Transport.
	ClientGo Client = "go"
	// ClientLibmariadb is package libmariadb: the C client library
	// tpcc_start links, through cgo, with its statements bound and
	// executed as tpcc_start binds and executes them.
	ClientLibmariadb Client = "libmariadb"
)

// PreparedSession is one tpcc-mysql-mode connection with its prepared
// statements, as the workload drives it: arguments appended one by one,
// then a statement executed or queried by its index. Both clients
// implement it (Session here, libmariadb.Session).
type PreparedSession interface {
	// Int, Bytes and Float append an argument; the next Exec or Query
	// consumes them.
	Int(v int) PreparedSession
	Bytes(v []byte) PreparedSession
	Float(v float64) PreparedSession
	// Exec runs statement id with the pending arguments and discards the
	// result.
	Exec(id int) error
	// Query runs statement id with the pending arguments; read it with
	// Next and always close it.
	Query(id int) (driver.Rows, error)
	// Next reads the next row's first n columns; false at the end.
	Next(rows driver.Rows, n int) (bool, error)
	// Values is the row the last successful Next read: int64 for integer
	// columns, []byte for the others (valid until the next call on the
	// session), nil for NULL.
	Values(n int) []driver.Value
	// QueryOne runs statement id and hands its first row's n columns to
	// use; a missing row is ErrNoRow.
	QueryOne(id, n int, what string, use func(row []driver.Value)) error
	// Commit and Rollback are text COMMIT and ROLLBACK.
	Commit() error
	Rollback() error
	// Close closes the statements and the connection.
	Close()
}

// SessionOpener opens a connection's PreparedSession: one per client.
type SessionOpener interface {
	// Open connects and prepares texts (statement i is texts[i]), once
	// per connection as tpcc_start does.
	Open(ctx context.Context, texts []string) (PreparedSession, error)
	// ThreadPerConnection says the connection's loop stays on one OS
	// thread, as each tpcc_start connection has its own thread.
	ThreadPerConnection() bool
}

// GoOpener opens Sessions through a connector (NewConnector).
type GoOpener struct{ Connector driver.Connector }

// Open connects and prepares texts (OpenSession).
func (g GoOpener) Open(ctx context.Context, texts []string) (PreparedSession, error) {
	return OpenSession(ctx, g.Connector, texts)
}

// ThreadPerConnection is false: a Session may move between threads.
func (GoOpener) ThreadPerConnection() bool { return false }
