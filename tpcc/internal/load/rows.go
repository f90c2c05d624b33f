package load

import (
	"context"
	"database/sql"
	"time"

	"flushbench/tpcc/internal/mysqlwire"
	"flushbench/tpcc/internal/spec"
)

// loader generates rows for one job on one connection.
type loader struct {
	conn *sql.Conn
	rng  *spec.Rand
	now  string // load timestamp for c_since, h_date, o_entry_d
}

// maxLoadRetries bounds how often one load job is retried after a deadlock or
// lock wait timeout. Parallel multi-row INSERTs into the same table can deadlock
// on InnoDB's insert-intention/gap locks even though the key ranges are disjoint.
const maxLoadRetries = 10

// runWithRetry runs one job in its own transaction, retrying it from the same
// random seed (so the rows are identical) when InnoDB reports a deadlock or a
// lock wait timeout.
func (l *loader) runWithRetry(ctx context.Context, j loadJob, seed uint64, cons spec.Constants) error {
	for attempt := 0; ; attempt++ {
		l.rng = spec.NewRand(seed)
		l.rng.C = cons
		err := l.run(ctx, j)
		if err == nil || !mysqlwire.IsRetryable(err) || attempt >= maxLoadRetries {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(50*(attempt+1)) * time.Millisecond):
		}
	}
}

func (l *loader) run(ctx context.Context, j loadJob) error {
	var err error
	switch j.kind {
	case "items":
		err = l.items(ctx, j.lo, j.hi)
	case "warehouse":
		err = l.warehouse(ctx, j.w)
	case "stock":
		err = l.stock(ctx, j.w, j.lo, j.hi)
	case "customers":
		err = l.customers(ctx, j.w, j.d)
	case "orders":
		err = l.orders(ctx, j.w, j.d)
	}
	if err != nil {
		l.conn.ExecContext(context.Background(), "ROLLBACK")
		return err
	}
	_, err = l.conn.ExecContext(ctx, "COMMIT")
	return err
}

func (l *loader) items(ctx context.Context, lo, hi int) error {
	r := l.rng
	b := mysqlwire.NewBatchInsert(l.conn, "INSERT INTO item (i_id, i_im_id, i_name, i_price, i_data) VALUES ", loadBatchRows)
	for id := lo; id <= hi; id++ {
		b.Begin()
		b.Int(id)
		b.Int(r.Uniform(1, 10000))
		b.Str(func(x []byte) []byte { return r.AString(x, 14, 24) })
		b.Fixed(r.Uniform(100, 10000), 2)
		b.Str(func(x []byte) []byte { return r.DataString(x, 26, 50) })
		if err := b.End(ctx); err != nil {
			return err
		}
	}
	return b.Flush(ctx)
}

// address appends street_1, street_2, city, state, zip.
func (l *loader) address(b *mysqlwire.BatchInsert) {
	r := l.rng
	b.Str(func(x []byte) []byte { return r.AString(x, 10, 20) })
	b.Str(func(x []byte) []byte { return r.AString(x, 10, 20) })
	b.Str(func(x []byte) []byte { return r.AString(x, 10, 20) })
	b.Str(r.State)
	b.Str(r.Zip)
}

func (l *loader) warehouse(ctx context.Context, w int) error {
	r := l.rng
	b := mysqlwire.NewBatchInsert(l.conn, "INSERT INTO warehouse (w_id, w_name, w_street_1, w_street_2, w_city, w_state, w_zip, w_tax, w_ytd) VALUES ", 1)
	b.Begin()
	b.Int(w)
	b.Str(func(x []byte) []byte { return r.AString(x, 6, 10) })
	l.address(b)
	b.Fixed(r.Uniform(0, 20), 2) // w_tax in [0.00, 0.20]: DECIMAL(4,2) as in tpcc-mysql
	b.Fixed(30000000, 2)
	if err := b.End(ctx); err != nil {
		return err
	}
	b = mysqlwire.NewBatchInsert(l.conn, "INSERT INTO district (d_id, d_w_id, d_name, d_street_1, d_street_2, d_city, d_state, d_zip, d_tax, d_ytd, d_next_o_id) VALUES ", spec.DistrictsPerW)
	for d := 1; d <= spec.DistrictsPerW; d++ {
		b.Begin()
		b.Int(d)
		b.Int(w)
		b.Str(func(x []byte) []byte { return r.AString(x, 6, 10) })
		l.address(b)
		b.Fixed(r.Uniform(0, 20), 2)
		b.Fixed(3000000, 2)
		b.Int(spec.OrdersPerD + 1)
		if err := b.End(ctx); err != nil {
			return err
		}
	}
	return b.Flush(ctx)
}

func (l *loader) stock(ctx context.Context, w, lo, hi int) error {
	r := l.rng
	b := mysqlwire.NewBatchInsert(l.conn, "INSERT INTO stock (s_i_id, s_w_id, s_quantity, s_dist_01, s_dist_02, s_dist_03, s_dist_04, s_dist_05, "+
		"s_dist_06, s_dist_07, s_dist_08, s_dist_09, s_dist_10, s_ytd, s_order_cnt, s_remote_cnt, s_data) VALUES ", loadBatchRows)
	dist := func(x []byte) []byte { return r.AString(x, 24, 24) }
	for id := lo; id <= hi; id++ {
		b.Begin()
		b.Int(id)
		b.Int(w)
		b.Int(r.Uniform(10, 100))
		for k := 0; k < 10; k++ {
			b.Str(dist)
		}
		b.Int(0)
		b.Int(0)
		b.Int(0)
		b.Str(func(x []byte) []byte { return r.DataString(x, 26, 50) })
		if err := b.End(ctx); err != nil {
			return err
		}
	}
	return b.Flush(ctx)
}

func (l *loader) customers(ctx context.Context, w, d int) error {
	r := l.rng
	c := mysqlwire.NewBatchInsert(l.conn, "INSERT INTO customer (c_id, c_d_id, c_w_id, c_first, c_middle, c_last, c_street_1, c_street_2, c_city, c_state, c_zip, "+
		"c_phone, c_since, c_credit, c_credit_lim, c_discount, c_balance, c_ytd_payment, c_payment_cnt, c_delivery_cnt, c_data) VALUES ", loadBatchRows)
	h := mysqlwire.NewBatchInsert(l.conn, "INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data) VALUES ", loadBatchRows)
	for id := 1; id <= spec.CustomersPerD; id++ {
		c.Begin()
		c.Int(id)
		c.Int(d)
		c.Int(w)
		c.Str(func(x []byte) []byte { return r.AString(x, 8, 16) })
		c.Lit("OE")
		// The first 1000 customers cover every last name once; the rest
		// are skewed by NURand so by-name lookups find 1..n rows (4.3.3.1).
		num := id - 1
		if id > 1000 {
			num = r.NURand(255, 0, 999, r.C.CLast)
		}
		c.Str(func(x []byte) []byte { return spec.LastName(x, num) })
		l.address(c)
		c.Str(func(x []byte) []byte { return r.NString(x, 16, 16) })
		c.Lit(l.now)
		if r.Uniform(1, 10) == 1 {
			c.Lit("BC")
		} else {
			c.Lit("GC")
		}
		c.Int(50000)                 // c_credit_lim BIGINT
		c.Fixed(r.Uniform(0, 50), 2) // c_discount in [0.00, 0.50], DECIMAL(4,2)
		c.Fixed(-1000, 2)
		c.Fixed(1000, 2)
		c.Int(1)
		c.Int(0)
		c.Str(func(x []byte) []byte { return r.AString(x, 300, 500) })
		if err := c.End(ctx); err != nil {
			return err
		}

		h.Begin()
		h.Int(id)
		h.Int(d)
		h.Int(w)
		h.Int(d)
		h.Int(w)
		h.Lit(l.now)
		h.Fixed(1000, 2)
		h.Str(func(x []byte) []byte { return r.AString(x, 12, 24) })
		if err := h.End(ctx); err != nil {
			return err
		}
	}
	if err := c.Flush(ctx); err != nil {
		return err
	}
	return h.Flush(ctx)
}

func (l *loader) orders(ctx context.Context, w, d int) error {
	r := l.rng
	o := mysqlwire.NewBatchInsert(l.conn, "INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt, o_all_local) VALUES ", loadBatchRows)
	ol := mysqlwire.NewBatchInsert(l.conn, "INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_delivery_d, "+
		"ol_quantity, ol_amount, ol_dist_info) VALUES ", loadOrderLineRows)
	no := mysqlwire.NewBatchInsert(l.conn, "INSERT INTO new_orders (no_o_id, no_d_id, no_w_id) VALUES ", loadBatchRows)
	// o_c_id is a random permutation of the customers (4.3.3.1).
	perm := make([]int, spec.CustomersPerD)
	for i := range perm {
		perm[i] = i + 1
	}
	r.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
	for id := 1; id <= spec.OrdersPerD; id++ {
		delivered := id < spec.FirstUndelivered
		cnt := r.Uniform(5, 15)
		o.Begin()
		o.Int(id)
		o.Int(d)
		o.Int(w)
		o.Int(perm[id-1])
		o.Lit(l.now)
		if delivered {
			o.Int(r.Uniform(1, 10))
		} else {
			o.Null()
		}
		o.Int(cnt)
		o.Int(1)
		if err := o.End(ctx); err != nil {
			return err
		}
		for n := 1; n <= cnt; n++ {
			ol.Begin()
			ol.Int(id)
			ol.Int(d)
			ol.Int(w)
			ol.Int(n)
			ol.Int(r.Uniform(1, spec.NumItems))
			ol.Int(w)
			if delivered {
				ol.Lit(l.now)
			} else {
				ol.Null()
			}
			ol.Int(5)
			if delivered {
				ol.Fixed(0, 2)
			} else {
				ol.Fixed(r.Uniform(1, 999999), 2)
			}
			ol.Str(func(x []byte) []byte { return r.AString(x, 24, 24) })
			if err := ol.End(ctx); err != nil {
				return err
			}
		}
		if !delivered {
			no.Begin()
			no.Int(id)
			no.Int(d)
			no.Int(w)
			if err := no.End(ctx); err != nil {
				return err
			}
		}
	}
	for _, b := range []*mysqlwire.BatchInsert{o, ol, no} {
		if err := b.Flush(ctx); err != nil {
			return err
		}
	}
	return nil
}
