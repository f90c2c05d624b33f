package main

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"

	"flushbench/tpcc/internal/libmariadb"
	"flushbench/tpcc/internal/mysqlwire"
)

// Both clients must bind the workload's arguments and hand back result
// columns alike: int64 for integer columns, []byte text for DECIMAL,
// dates and strings, nil for NULL, and errors that mysqlwire classifies
// the same way (duplicate key, lock wait timeout, no row, lost
// connection). These tests drive each client's PreparedSession directly
// against the sandbox server.

// valueStatements are prepared on every session of these tests.
var valueStatements = []string{
	"SELECT CAST(? AS SIGNED), ?, CAST(? AS DECIMAL(12,4)), NULL, CAST('2026-01-02 03:04:05' AS DATETIME), COUNT(*), CAST(? AS DECIMAL(12,2))",
	"INSERT INTO kv (k, v, amount) VALUES (?, ?, ?)",
	"SELECT k, v, amount FROM kv WHERE k = ?",
	"SELECT k FROM kv WHERE k = ? FOR UPDATE",
	"SET SESSION innodb_lock_wait_timeout = 1",
	"SELECT CONNECTION_ID()",
	"SELECT k FROM kv WHERE k >= ? ORDER BY k",
}

const (
	stmtValues = iota
	stmtInsert
	stmtSelect
	stmtLock
	stmtShortLockWait
	stmtConnID
	stmtRange
)

// clientSchema creates database clientvalues with table kv once and
// returns an admin connection to it.
func clientSchema(t *testing.T) (*sandbox, *sql.DB) {
	t.Helper()
	s := sharedServer(t)
	db, err := sql.Open("mysql", "root@unix("+s.socket+")/")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	for _, q := range []string{
		"CREATE DATABASE IF NOT EXISTS clientvalues",
		"CREATE TABLE IF NOT EXISTS clientvalues.kv (k INT PRIMARY KEY, v VARCHAR(500), amount DECIMAL(6,2)) ENGINE=InnoDB",
		"DELETE FROM clientvalues.kv",
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	return s, db
}

// openClient opens a session of client on schema clientvalues.
func openClient(t *testing.T, s *sandbox, client string) mysqlwire.PreparedSession {
	t.Helper()
	o := &mysqlwire.ConnOpts{Socket: s.socket, User: "root"}
	var op mysqlwire.SessionOpener
	var err error
	if client == string(mysqlwire.ClientLibmariadb) {
		op, err = libmariadb.NewOpener(o, "clientvalues")
	} else {
		var c driver.Connector
		c, err = mysqlwire.NewConnector(o, "clientvalues", mysqlwire.TransportBlocking)
		op = mysqlwire.GoOpener{Connector: c}
	}
	if err != nil {
		t.Fatal(err)
	}
	sess, err := op.Open(context.Background(), valueStatements)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sess.Close)
	return sess
}

// describe renders a column value with its Go type.
func describe(v driver.Value) string {
	if b, ok := v.([]byte); ok {
		return fmt.Sprintf("[]byte(%q)", b)
	}
	return fmt.Sprintf("%T(%v)", v, v)
}

func TestClientBindAndFetchConversions(t *testing.T) {
	for _, client := range clients {
		t.Run("client="+client, func(t *testing.T) {
			requireClient(t, client)
			s, _ := clientSchema(t)
			sess := openClient(t, s, client)
			var got []string
			err := sess.Int(70000).Bytes([]byte("it's")).Float(0.1).Bytes([]byte("-12.5")).QueryOne(stmtValues, 7, "values", func(row []driver.Value) {
				for _, v := range row {
					got = append(got, describe(v))
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			want := []string{"int64(70000)", `[]byte("it's")`, `[]byte("0.1000")`, "<nil>(<nil>)",
				`[]byte("2026-01-02 03:04:05")`, "int64(1)", `[]byte("-12.50")`}
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("row\n got %v\nwant %v", got, want)
			}
			checkRowTrip(t, sess)
		})
	}
}

// checkRowTrip: an inserted row reads back through Exec, Query and Next,
// a rolled-back insert is gone, and a missing row is ErrNoRow.
func checkRowTrip(t *testing.T, sess mysqlwire.PreparedSession) {
	t.Helper()
	long := []byte(strings.Repeat("x", 500))
	if err := sess.Int(1).Bytes(long).Float(1234.56).Exec(stmtInsert); err != nil {
		t.Fatal(err)
	}
	// An empty text (not nil: go-sql-driver sends a nil []byte as NULL; the
	// workload never binds one).
	if err := sess.Int(2).Bytes([]byte{}).Float(-7).Exec(stmtInsert); err != nil {
		t.Fatal(err)
	}
	if err := sess.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := sess.Int(3).Bytes([]byte("gone")).Float(1).Exec(stmtInsert); err != nil {
		t.Fatal(err)
	}
	if err := sess.Rollback(); err != nil {
		t.Fatal(err)
	}
	rows, err := sess.Int(1).Query(stmtRange)
	if err != nil {
		t.Fatal(err)
	}
	var keys []int64
	for {
		ok, err := sess.Next(rows, 1)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		keys = append(keys, mysqlwire.AsInt(sess.Values(1)[0]))
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(keys) != "[1 2]" {
		t.Errorf("keys after commit and rollback: %v, want [1 2]", keys)
	}
	err = sess.Int(1).QueryOne(stmtSelect, 3, "row 1", func(row []driver.Value) {
		if v, _ := row[1].([]byte); string(v) != string(long) || mysqlwire.AsFloat(row[2]) != 1234.56 {
			t.Errorf("row 1: %v %s", describe(row[1])[:20], describe(row[2]))
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	err = sess.Int(2).QueryOne(stmtSelect, 3, "row 2", func(row []driver.Value) {
		if v, ok := row[1].([]byte); !ok || len(v) != 0 || mysqlwire.ParseFixed(row[2].([]byte), 2) != -700 {
			t.Errorf("row 2: %s %s", describe(row[1]), describe(row[2]))
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := sess.Int(99).QueryOne(stmtSelect, 3, "row 99", nil); !errors.As(err, new(mysqlwire.ErrNoRow)) {
		t.Errorf("missing row: %v, want ErrNoRow", err)
	}
	if err := sess.Commit(); err != nil {
		t.Fatal(err)
	}
}

func TestClientErrorsClassified(t *testing.T) {
	for _, client := range clients {
		t.Run("client="+client, func(t *testing.T) {
			requireClient(t, client)
			s, admin := clientSchema(t)
			a, b := openClient(t, s, client), openClient(t, s, client)
			if err := a.Int(5).Bytes([]byte("v")).Float(1).Exec(stmtInsert); err != nil {
				t.Fatal(err)
			}
			if err := a.Commit(); err != nil {
				t.Fatal(err)
			}
			err := a.Int(5).Bytes([]byte("v")).Float(1).Exec(stmtInsert)
			var me *mysql.MySQLError
			if !errors.As(err, &me) || me.Number != 1062 || mysqlwire.IsRetryable(err) || mysqlwire.IsConnLost(err) {
				t.Errorf("duplicate key: %v", err)
			}
			if err := a.Rollback(); err != nil {
				t.Fatal(err)
			}
			// b waits for a's row lock: a lock wait timeout, retryable.
			if err := a.Int(5).QueryOne(stmtLock, 1, "lock", nil); err != nil {
				t.Fatal(err)
			}
			if err := b.Exec(stmtShortLockWait); err != nil {
				t.Fatal(err)
			}
			if err := b.Int(5).QueryOne(stmtLock, 1, "lock", nil); !mysqlwire.IsRetryable(err) {
				t.Errorf("lock wait: %v, want a retryable error", err)
			}
			if err := a.Rollback(); err != nil {
				t.Fatal(err)
			}
			// b's connection killed by the server: lost.
			var id int64
			if err := b.QueryOne(stmtConnID, 1, "id", func(row []driver.Value) { id = mysqlwire.AsInt(row[0]) }); err != nil {
				t.Fatal(err)
			}
			if _, err := admin.Exec(fmt.Sprintf("KILL %d", id)); err != nil {
				t.Fatal(err)
			}
			if err := b.Int(5).QueryOne(stmtSelect, 3, "after kill", nil); !mysqlwire.IsConnLost(err) {
				t.Errorf("killed connection: %v, want a lost connection", err)
			}
		})
	}
}
