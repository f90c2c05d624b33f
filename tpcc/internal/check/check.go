// Package check is tpcc check: TPC-C's consistency conditions (3.3.2) as
// queries that count violations.
package check

import (
	"context"
	"fmt"
	"io"

	"flushbench/tpcc/internal/mysqlwire"
	"flushbench/tpcc/internal/schema"
	"flushbench/tpcc/internal/spec"
)

// Opts configures tpcc check.
type Opts struct {
	Conn mysqlwire.ConnOpts
	W    int
	Out  io.Writer
}

// condition is one consistency check: a query returning the number of
// violating warehouses/districts (0 = pass).
type condition struct {
	name  string
	query string
	nargs int
}

// conditions implements TPC-C 3.3.2.1-3.3.2.5, 3.3.2.8 and 3.3.2.9 on
// warehouses 1..W. They are exact only on a quiescent database. Condition 5
// is checked in its per-district count form (orders with NULL carrier =
// new_orders rows), which needs no row-by-row join.
var conditions = []condition{
	{"Condition 1 (W_YTD = sum(D_YTD))",
		`SELECT COUNT(*) FROM warehouse WHERE w_id <= ? AND w_ytd <> (SELECT SUM(d_ytd) FROM district WHERE d_w_id = w_id)`, 1},
	{"Condition 2 (D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID))",
		`SELECT COUNT(*) FROM district WHERE d_w_id <= ? AND (
  d_next_o_id - 1 <> (SELECT MAX(o_id) FROM orders WHERE o_w_id = d_w_id AND o_d_id = d_id) OR
  d_next_o_id - 1 <> (SELECT MAX(no_o_id) FROM new_orders WHERE no_w_id = d_w_id AND no_d_id = d_id))`, 1},
	{"Condition 3 (max(NO_O_ID) - min(NO_O_ID) + 1 = rows in NEW-ORDER)",
		`SELECT COUNT(*) FROM (SELECT MAX(no_o_id) - MIN(no_o_id) + 1 AS span, COUNT(*) AS n FROM new_orders
  WHERE no_w_id <= ? GROUP BY no_w_id, no_d_id) x WHERE span <> n`, 1},
	{"Condition 4 (sum(O_OL_CNT) = rows in ORDER-LINE)",
		`SELECT COUNT(*) FROM (SELECT o_w_id, o_d_id, SUM(o_ol_cnt) AS s FROM orders WHERE o_w_id <= ? GROUP BY o_w_id, o_d_id) a
  LEFT JOIN (SELECT ol_w_id, ol_d_id, COUNT(*) AS c FROM order_line WHERE ol_w_id <= ? GROUP BY ol_w_id, ol_d_id) b
  ON a.o_w_id = b.ol_w_id AND a.o_d_id = b.ol_d_id WHERE a.s <> COALESCE(b.c, 0)`, 2},
	{"Condition 5 (orders with NULL O_CARRIER_ID = rows in NEW-ORDER)",
		`SELECT COUNT(*) FROM (SELECT o_w_id, o_d_id, SUM(o_carrier_id IS NULL) AS n FROM orders WHERE o_w_id <= ? GROUP BY o_w_id, o_d_id) a
  LEFT JOIN (SELECT no_w_id, no_d_id, COUNT(*) AS c FROM new_orders WHERE no_w_id <= ? GROUP BY no_w_id, no_d_id) b
  ON a.o_w_id = b.no_w_id AND a.o_d_id = b.no_d_id WHERE a.n <> COALESCE(b.c, 0)`, 2},
	{"Condition 8 (W_YTD = sum(H_AMOUNT))",
		`SELECT COUNT(*) FROM warehouse LEFT JOIN (SELECT h_w_id, SUM(h_amount) AS s FROM history WHERE h_w_id <= ? GROUP BY h_w_id) h
  ON h.h_w_id = w_id WHERE w_id <= ? AND w_ytd <> COALESCE(h.s, 0)`, 2},
	{"Condition 9 (D_YTD = sum(H_AMOUNT) per district)",
		`SELECT COUNT(*) FROM district LEFT JOIN (SELECT h_w_id, h_d_id, SUM(h_amount) AS s FROM history WHERE h_w_id <= ? GROUP BY h_w_id, h_d_id) h
  ON h.h_w_id = d_w_id AND h.h_d_id = d_id WHERE d_w_id <= ? AND d_ytd <> COALESCE(h.s, 0)`, 2},
}

// Run runs the consistency conditions and reports whether all passed.
func Run(ctx context.Context, o Opts) (bool, error) {
	db, err := mysqlwire.OpenDB(ctx, &o.Conn, true, nil, 1)
	if err != nil {
		return false, err
	}
	defer db.Close()
	if err := schema.EnsureLoaded(ctx, db, o.Conn.DB, o.W); err != nil {
		return false, err
	}
	// Sanity: every district of 1..W exists (otherwise the per-district
	// conditions could pass vacuously).
	var nd int
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM district WHERE d_w_id <= ?", o.W).Scan(&nd); err != nil {
		return false, err
	}
	allOK := true
	if nd != o.W*spec.DistrictsPerW {
		fmt.Fprintf(o.Out, "Districts present (%d expected): FAIL (%d found)\n", o.W*spec.DistrictsPerW, nd)
		allOK = false
	}
	for _, c := range conditions {
		args := make([]any, c.nargs)
		for i := range args {
			args[i] = o.W
		}
		var bad int
		if err := db.QueryRowContext(ctx, c.query, args...).Scan(&bad); err != nil {
			return false, fmt.Errorf("%s: %w", c.name, err)
		}
		if bad == 0 {
			fmt.Fprintf(o.Out, "%s: PASS\n", c.name)
		} else {
			fmt.Fprintf(o.Out, "%s: FAIL (%d violations)\n", c.name, bad)
			allOK = false
		}
	}
	return allOK, nil
}
