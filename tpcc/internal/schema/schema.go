// Package schema is tpcc-mysql's schema (tables, secondary indexes, foreign
// keys) and the checks that a database holds a loaded dataset.
package schema

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// TableNames are the nine TPC-C tables with tpcc-mysql's names.
var TableNames = []string{"warehouse", "district", "customer", "history", "new_orders", "orders", "order_line", "item", "stock"}

// The schema is tpcc-mysql's (create_table.sql followed by add_fkey_idx.sql),
// so a dataset loaded by either tool runs under the other and the secondary
// indexes and foreign keys (dirty pages a flushing study measures) are the
// same. Column types are tpcc-mysql's, not the spec's: tax and discount are
// DECIMAL(4,2), c_credit_lim BIGINT, c_data TEXT. testdata/schema-mariadb10.11.sql
// is SHOW CREATE TABLE of tpcc-mysql's own DDL; TestSchemaMatchesTpccMysql
// compares ours with it.

// TableDDL creates the nine tables with their primary keys only; the bulk
// load goes into these (appending in primary-key order, no secondary index
// maintenance).
var TableDDL = []string{
	`CREATE TABLE IF NOT EXISTS warehouse (
  w_id SMALLINT NOT NULL,
  w_name VARCHAR(10), w_street_1 VARCHAR(20), w_street_2 VARCHAR(20), w_city VARCHAR(20),
  w_state CHAR(2), w_zip CHAR(9), w_tax DECIMAL(4,2), w_ytd DECIMAL(12,2),
  PRIMARY KEY (w_id)) ENGINE=InnoDB`,
	`CREATE TABLE IF NOT EXISTS district (
  d_id TINYINT NOT NULL, d_w_id SMALLINT NOT NULL,
  d_name VARCHAR(10), d_street_1 VARCHAR(20), d_street_2 VARCHAR(20), d_city VARCHAR(20),
  d_state CHAR(2), d_zip CHAR(9), d_tax DECIMAL(4,2), d_ytd DECIMAL(12,2), d_next_o_id INT,
  PRIMARY KEY (d_w_id, d_id)) ENGINE=InnoDB`,
	`CREATE TABLE IF NOT EXISTS customer (
  c_id INT NOT NULL, c_d_id TINYINT NOT NULL, c_w_id SMALLINT NOT NULL,
  c_first VARCHAR(16), c_middle CHAR(2), c_last VARCHAR(16),
  c_street_1 VARCHAR(20), c_street_2 VARCHAR(20), c_city VARCHAR(20), c_state CHAR(2), c_zip CHAR(9),
  c_phone CHAR(16), c_since DATETIME, c_credit CHAR(2), c_credit_lim BIGINT,
  c_discount DECIMAL(4,2), c_balance DECIMAL(12,2), c_ytd_payment DECIMAL(12,2),
  c_payment_cnt SMALLINT, c_delivery_cnt SMALLINT, c_data TEXT,
  PRIMARY KEY (c_w_id, c_d_id, c_id)) ENGINE=InnoDB`,
	`CREATE TABLE IF NOT EXISTS history (
  h_c_id INT, h_c_d_id TINYINT, h_c_w_id SMALLINT, h_d_id TINYINT, h_w_id SMALLINT,
  h_date DATETIME, h_amount DECIMAL(6,2), h_data VARCHAR(24)) ENGINE=InnoDB`,
	`CREATE TABLE IF NOT EXISTS new_orders (
  no_o_id INT NOT NULL, no_d_id TINYINT NOT NULL, no_w_id SMALLINT NOT NULL,
  PRIMARY KEY (no_w_id, no_d_id, no_o_id)) ENGINE=InnoDB`,
	`CREATE TABLE IF NOT EXISTS orders (
  o_id INT NOT NULL, o_d_id TINYINT NOT NULL, o_w_id SMALLINT NOT NULL, o_c_id INT,
  o_entry_d DATETIME, o_carrier_id TINYINT, o_ol_cnt TINYINT, o_all_local TINYINT,
  PRIMARY KEY (o_w_id, o_d_id, o_id)) ENGINE=InnoDB`,
	`CREATE TABLE IF NOT EXISTS order_line (
  ol_o_id INT NOT NULL, ol_d_id TINYINT NOT NULL, ol_w_id SMALLINT NOT NULL, ol_number TINYINT NOT NULL,
  ol_i_id INT, ol_supply_w_id SMALLINT, ol_delivery_d DATETIME, ol_quantity TINYINT,
  ol_amount DECIMAL(6,2), ol_dist_info CHAR(24),
  PRIMARY KEY (ol_w_id, ol_d_id, ol_o_id, ol_number)) ENGINE=InnoDB`,
	`CREATE TABLE IF NOT EXISTS item (
  i_id INT NOT NULL, i_im_id INT, i_name VARCHAR(24), i_price DECIMAL(5,2), i_data VARCHAR(50),
  PRIMARY KEY (i_id)) ENGINE=InnoDB`,
	`CREATE TABLE IF NOT EXISTS stock (
  s_i_id INT NOT NULL, s_w_id SMALLINT NOT NULL, s_quantity SMALLINT,
  s_dist_01 CHAR(24), s_dist_02 CHAR(24), s_dist_03 CHAR(24), s_dist_04 CHAR(24), s_dist_05 CHAR(24),
  s_dist_06 CHAR(24), s_dist_07 CHAR(24), s_dist_08 CHAR(24), s_dist_09 CHAR(24), s_dist_10 CHAR(24),
  s_ytd DECIMAL(8,0), s_order_cnt SMALLINT, s_remote_cnt SMALLINT, s_data VARCHAR(50),
  PRIMARY KEY (s_w_id, s_i_id)) ENGINE=InnoDB`,
}

// IndexDDL is what tpcc-mysql's add_fkey_idx.sql adds: four secondary
// indexes, then ten foreign keys (history's two create their own indexes).
// One entry per table, each a single ALTER TABLE so the table is rebuilt at
// most once; the entries touch different tables and run in parallel after the
// bulk load. Within a table the clause order gives tpcc-mysql's index order.
// Run with foreign_key_checks=0, so adding a foreign key validates nothing
// and is an in-place metadata change.
var IndexDDL = []string{
	`ALTER TABLE customer ADD INDEX idx_customer (c_w_id, c_d_id, c_last, c_first),
  ADD CONSTRAINT fkey_customer_1 FOREIGN KEY (c_w_id, c_d_id) REFERENCES district (d_w_id, d_id)`,
	`ALTER TABLE orders ADD INDEX idx_orders (o_w_id, o_d_id, o_c_id, o_id),
  ADD CONSTRAINT fkey_orders_1 FOREIGN KEY (o_w_id, o_d_id, o_c_id) REFERENCES customer (c_w_id, c_d_id, c_id)`,
	`ALTER TABLE stock ADD INDEX fkey_stock_2 (s_i_id),
  ADD CONSTRAINT fkey_stock_1 FOREIGN KEY (s_w_id) REFERENCES warehouse (w_id),
  ADD CONSTRAINT fkey_stock_2 FOREIGN KEY (s_i_id) REFERENCES item (i_id)`,
	`ALTER TABLE order_line ADD INDEX fkey_order_line_2 (ol_supply_w_id, ol_i_id),
  ADD CONSTRAINT fkey_order_line_1 FOREIGN KEY (ol_w_id, ol_d_id, ol_o_id) REFERENCES orders (o_w_id, o_d_id, o_id),
  ADD CONSTRAINT fkey_order_line_2 FOREIGN KEY (ol_supply_w_id, ol_i_id) REFERENCES stock (s_w_id, s_i_id)`,
	`ALTER TABLE district ADD CONSTRAINT fkey_district_1 FOREIGN KEY (d_w_id) REFERENCES warehouse (w_id)`,
	`ALTER TABLE history ADD INDEX fkey_history_1 (h_c_w_id, h_c_d_id, h_c_id), ADD INDEX fkey_history_2 (h_w_id, h_d_id),
  ADD CONSTRAINT fkey_history_1 FOREIGN KEY (h_c_w_id, h_c_d_id, h_c_id) REFERENCES customer (c_w_id, c_d_id, c_id),
  ADD CONSTRAINT fkey_history_2 FOREIGN KEY (h_w_id, h_d_id) REFERENCES district (d_w_id, d_id)`,
	`ALTER TABLE new_orders ADD CONSTRAINT fkey_new_orders_1 FOREIGN KEY (no_w_id, no_d_id, no_o_id) REFERENCES orders (o_w_id, o_d_id, o_id)`,
}

// ListTables returns the tables present in database dbName.
func ListTables(ctx context.Context, db *sql.DB, dbName string) ([]string, error) {
	rows, err := db.QueryContext(ctx, "SELECT table_name FROM information_schema.tables WHERE table_schema = ?", dbName)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, strings.ToLower(s))
	}
	return out, rows.Err()
}

// EnsureLoaded verifies that the TPC-C tables exist and that at least
// wantW warehouses were loaded; it is the precondition for run and check.
func EnsureLoaded(ctx context.Context, db *sql.DB, dbName string, wantW int) error {
	have, err := ListTables(ctx, db, dbName)
	if err != nil {
		return err
	}
	set := map[string]bool{}
	for _, t := range have {
		set[t] = true
	}
	var missing []string
	for _, t := range TableNames {
		if !set[t] {
			missing = append(missing, t)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("database %q is missing TPC-C tables (%s): run tpcc load first", dbName, strings.Join(missing, ", "))
	}
	var n, maxW sql.NullInt64
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*), MAX(w_id) FROM warehouse").Scan(&n, &maxW); err != nil {
		return err
	}
	if !n.Valid || n.Int64 == 0 {
		return fmt.Errorf("database %q has no warehouses: run tpcc load first", dbName)
	}
	if n.Int64 < int64(wantW) || maxW.Int64 < int64(wantW) {
		return fmt.Errorf("-w %d is larger than the %d warehouses loaded in database %q", wantW, n.Int64, dbName)
	}
	return nil
}
