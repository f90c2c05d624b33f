package load

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"

	"flushbench/tpcc/internal/mysqlwire"
	"flushbench/tpcc/internal/schema"
)

// sessionParams are the loader connections' session variables: one commit
// per job, and no uniqueness or foreign key checks during the bulk insert.
var sessionParams = map[string]string{"autocommit": "0", "unique_checks": "0", "foreign_key_checks": "0"}

// prepare readies the database for a full or a partial load and returns the
// pool the jobs use.
func prepare(ctx context.Context, o *Opts) (*sql.DB, error) {
	if o.partial() {
		return preparePartial(ctx, o, sessionParams)
	}
	return prepareFull(ctx, o, sessionParams)
}

// prepareFull creates the database (refusing one with tables unless --drop)
// and the tables with primary keys only.
func prepareFull(ctx context.Context, o *Opts, params map[string]string) (*sql.DB, error) {
	if err := prepareDatabase(ctx, o); err != nil {
		return nil, err
	}
	db, err := mysqlwire.OpenDB(ctx, &o.Conn, true, params, o.Workers)
	if err != nil {
		return nil, err
	}
	for _, ddl := range schema.TableDDL {
		if _, err := db.ExecContext(ctx, ddl); err != nil {
			db.Close()
			return nil, fmt.Errorf("creating schema: %w", err)
		}
	}
	return db, nil
}

// preparePartial makes sure the complete schema exists without touching
// data: under a named lock (parallel partial loads start together), it
// creates the database and, if it has no tables, the tables with their
// indexes and foreign keys.
func preparePartial(ctx context.Context, o *Opts, params map[string]string) (*sql.DB, error) {
	admin, err := mysqlwire.OpenDB(ctx, &o.Conn, false, nil, 1)
	if err != nil {
		return nil, err
	}
	defer admin.Close()
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS "+mysqlwire.QuoteIdent(o.Conn.DB)); err != nil {
		return nil, err
	}
	db, err := mysqlwire.OpenDB(ctx, &o.Conn, true, params, o.Workers)
	if err != nil {
		return nil, err
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return nil, err
	}
	defer conn.Close()
	fail := func(err error) (*sql.DB, error) { db.Close(); return nil, err }
	var got sql.NullInt64
	if err := conn.QueryRowContext(ctx, "SELECT GET_LOCK(?, 600)", "tpcc_schema_"+o.Conn.DB).Scan(&got); err != nil {
		return fail(err)
	}
	if got.Int64 != 1 {
		return fail(errors.New("timed out waiting for another tpcc load to create the schema"))
	}
	defer conn.ExecContext(context.Background(), "DO RELEASE_LOCK(?)", "tpcc_schema_"+o.Conn.DB)
	tables, err := schema.ListTables(ctx, db, o.Conn.DB)
	if err != nil {
		return fail(err)
	}
	if len(tables) > 0 {
		return db, nil
	}
	for _, ddl := range append(append([]string{}, schema.TableDDL...), schema.IndexDDL...) {
		if _, err := conn.ExecContext(ctx, ddl); err != nil {
			return fail(fmt.Errorf("creating schema: %w", err))
		}
	}
	return db, nil
}

// addIndexes runs schema.IndexDDL on up to workers connections in parallel (each
// statement alters a different table).
func addIndexes(ctx context.Context, db *sql.DB, workers int) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	queue := make(chan string, len(schema.IndexDDL))
	for _, q := range schema.IndexDDL {
		queue <- q
	}
	close(queue)
	errc := make(chan error, workers)
	var wg sync.WaitGroup
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for q := range queue {
				if _, err := db.ExecContext(ctx, q); err != nil {
					errc <- fmt.Errorf("adding indexes and foreign keys (%s): %w", strings.SplitN(q, "\n", 2)[0], err)
					cancel()
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	return <-errc
}

var systemSchemas = map[string]bool{"mysql": true, "information_schema": true, "performance_schema": true, "sys": true}

// prepareDatabase creates the database, refusing to overwrite one that has
// tables unless --drop was given.
func prepareDatabase(ctx context.Context, o *Opts) error {
	if o.Conn.DB == "" {
		return errors.New("-d database is required")
	}
	db, err := mysqlwire.OpenDB(ctx, &o.Conn, false, nil, 1)
	if err != nil {
		return err
	}
	defer db.Close()
	tables, err := schema.ListTables(ctx, db, o.Conn.DB)
	if err != nil {
		return err
	}
	if len(tables) > 0 {
		if !o.Drop {
			return fmt.Errorf("database %q already has %d tables (%s); refusing to load into it: use --drop to drop and recreate it",
				o.Conn.DB, len(tables), strings.Join(tables, ", "))
		}
		if systemSchemas[strings.ToLower(o.Conn.DB)] {
			return fmt.Errorf("refusing to drop system database %q", o.Conn.DB)
		}
		fmt.Fprintf(o.Out, "Dropping database %s\n", o.Conn.DB)
		if _, err := db.ExecContext(ctx, "DROP DATABASE "+mysqlwire.QuoteIdent(o.Conn.DB)); err != nil {
			return err
		}
	}
	_, err = db.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS "+mysqlwire.QuoteIdent(o.Conn.DB))
	return err
}
