// Package mysqlwire is the driver's MySQL layer: connection options and
// error classification, the blocking-socket transport, the session below
// database/sql that tpcc-mysql mode drives, and the loader's multi-row
// INSERT buffer.
package mysqlwire

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
)

// ConnOpts are the tpcc_start-compatible connection flags.
type ConnOpts struct {
	Host     string
	Port     int
	Socket   string
	DB       string
	User     string
	Password string
}

// where describes the server address for messages.
func (o *ConnOpts) where() string {
	if o.Socket != "" {
		return "socket " + o.Socket
	}
	return net.JoinHostPort(o.Host, strconv.Itoa(o.Port))
}

// config builds a driver config. withDB=false connects without selecting a
// database (used to create it). params are session variables set on connect.
func (o *ConnOpts) config(withDB bool, params map[string]string) *mysql.Config {
	c := mysql.NewConfig()
	c.User = o.User
	c.Passwd = o.Password
	if o.Socket != "" {
		c.Net, c.Addr = "unix", o.Socket
	} else {
		c.Net, c.Addr = "tcp", net.JoinHostPort(o.Host, strconv.Itoa(o.Port))
	}
	if withDB {
		c.DBName = o.DB
	}
	c.Timeout = 10 * time.Second
	c.Params = params
	c.AllowNativePasswords = true
	return c
}

// OpenDB opens a pool and verifies the connection, translating the common
// failures into messages that say what to do.
func OpenDB(ctx context.Context, o *ConnOpts, withDB bool, params map[string]string, maxConns int) (*sql.DB, error) {
	conn, err := mysql.NewConnector(o.config(withDB, params))
	if err != nil {
		return nil, err
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(maxConns)
	db.SetMaxIdleConns(maxConns)
	db.SetConnMaxLifetime(0)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, o.Explain(err)
	}
	return db, nil
}

// Error numbers we treat specially.
const (
	erAccessDenied   = 1045
	erBadDB          = 1049
	erNoSuchTable    = 1146
	erLockWait       = 1205
	erDeadlock       = 1213
	erDBAccessDenied = 1044
)

// Explain turns a connection-time error into an actionable message.
func (o *ConnOpts) Explain(err error) error {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		switch me.Number {
		case erAccessDenied:
			return fmt.Errorf("access denied for user %q at %s: check -u/-p (or MYSQL_PWD): %w", o.User, o.where(), err)
		case erDBAccessDenied:
			return fmt.Errorf("user %q may not access database %q: %w", o.User, o.DB, err)
		case erBadDB:
			return fmt.Errorf("database %q does not exist: run tpcc load first: %w", o.DB, err)
		}
		if !IsConnLost(err) {
			return err
		}
	}
	if IsConnLost(err) {
		return fmt.Errorf("cannot connect to MySQL server at %s (is it running?): %w", o.where(), err)
	}
	return err
}

// IsRetryable reports deadlocks and lock wait timeouts, which TPC-C drivers
// retry rather than count as failures.
func IsRetryable(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && (me.Number == erDeadlock || me.Number == erLockWait)
}

// IsConnLost reports errors that mean the connection (or server) is gone.
func IsConnLost(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, driver.ErrBadConn) || errors.Is(err, mysql.ErrInvalidConn) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, sql.ErrConnDone) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ENOENT) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		// 1053 server shutdown in progress, 2006/2013 gone away / lost;
		// 2002/2003 the C client's cannot connect (socket / TCP).
		return me.Number == 1053 || me.Number == 2006 || me.Number == 2013 || me.Number == 2002 || me.Number == 2003
	}
	return strings.Contains(err.Error(), "connection refused")
}

// QuoteIdent quotes a MySQL identifier with backticks.
func QuoteIdent(s string) string {
	return "`" + strings.ReplaceAll(s, "`", "``") + "`"
}
