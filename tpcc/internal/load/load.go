package tpcc

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Cardinalities from TPC-C 4.3 / 1.2.
const (
	numItems          = 100000
	districtsPerW     = 10
	customersPerD     = 3000
	ordersPerD        = 3000
	firstUndelivered  = 2101 // orders >= this are in new_orders, undelivered
	stockChunk        = 10000
	itemChunk         = 10000
	loadBatchRows     = 1000
	loadOrderLineRows = 2000
)

// LoadOpts configures tpcc load.
type LoadOpts struct {
	Conn    ConnOpts
	W       int
	Workers int
	Drop    bool
	Seed    uint64
	Out     io.Writer
	// Part and MinW/MaxW are tpcc_load's -l, -m and -n: load only one
	// part (PartItems, PartWarehouse, PartCustomer, PartOrders) for
	// warehouses MinW..MaxW, e.g. from several processes in parallel. A
	// partial load never drops anything; it creates the schema (indexes and
	// foreign keys included) only if the database has no tables yet.
	Part       int
	MinW, MaxW int
}

// Parts of a partial load (tpcc_load -l).
const (
	PartAll       = 0
	PartItems     = 1
	PartWarehouse = 2 // warehouse, district, stock
	PartCustomer  = 3 // customer, history
	PartOrders    = 4 // orders, new_orders, order_line
)

// partial reports whether this is a tpcc_load -l/-m/-n style partial load.
func (o *LoadOpts) partial() bool {
	return o.Part != PartAll || o.MinW > 1 || (o.MaxW > 0 && o.MaxW != o.W)
}

// wants reports whether job kind k belongs to the part being loaded.
func (o *LoadOpts) wants(kind string) bool {
	switch o.Part {
	case PartAll:
		return true
	case PartItems:
		return kind == "items"
	case PartWarehouse:
		return kind == "warehouse" || kind == "stock"
	case PartCustomer:
		return kind == "customers"
	case PartOrders:
		return kind == "orders"
	}
	return false
}

// loadJob is one unit of parallel work, committed as one transaction.
type loadJob struct {
	kind   string // items, warehouse, stock, customers, orders
	w, d   int
	lo, hi int
}

// Load creates the schema and populates it per TPC-C 4.3. Work is split into
// jobs (item ranges, and per warehouse: its row and districts, stock ranges,
// customers+history per district, orders per district) that --workers
// connections take from a queue, so W warehouses load in parallel. A full
// load creates the tables with primary keys only and adds tpcc-mysql's
// secondary indexes and foreign keys after the data is in (faster than
// maintaining them row by row).
func Load(ctx context.Context, o LoadOpts) error {
	if o.W < 1 {
		return errors.New("-w must be at least 1")
	}
	if o.Workers < 1 {
		o.Workers = 1
	}
	if o.MinW < 1 {
		o.MinW = 1
	}
	if o.MaxW < 1 {
		o.MaxW = o.W
	}
	if o.Part < PartAll || o.Part > PartOrders {
		return fmt.Errorf("-l part must be 1 (items), 2 (warehouse), 3 (customer) or 4 (orders), not %d", o.Part)
	}
	if o.MinW > o.MaxW {
		return fmt.Errorf("-m %d is larger than -n %d", o.MinW, o.MaxW)
	}
	start := time.Now()
	params := map[string]string{"autocommit": "0", "unique_checks": "0", "foreign_key_checks": "0"}
	var db *sql.DB
	var err error
	if o.partial() {
		db, err = preparePartial(ctx, &o, params)
	} else {
		db, err = prepareFull(ctx, &o, params)
	}
	if err != nil {
		return err
	}
	defer db.Close()
	fmt.Fprintf(o.Out, "TPCC Data Load Started... (warehouses %d..%d, %d workers)\n", o.MinW, o.MaxW, o.Workers)

	var jobs []loadJob
	if o.wants("items") {
		for lo := 1; lo <= numItems; lo += itemChunk {
			jobs = append(jobs, loadJob{kind: "items", lo: lo, hi: lo + itemChunk - 1})
		}
	}
	nW := o.MaxW - o.MinW + 1
	remaining := make([]atomic.Int32, o.MaxW+1) // index 0: items
	for w := o.MinW; w <= o.MaxW; w++ {
		n0 := len(jobs)
		if o.wants("warehouse") {
			jobs = append(jobs, loadJob{kind: "warehouse", w: w})
			for lo := 1; lo <= numItems; lo += stockChunk {
				jobs = append(jobs, loadJob{kind: "stock", w: w, lo: lo, hi: lo + stockChunk - 1})
			}
		}
		for d := 1; d <= districtsPerW; d++ {
			if o.wants("customers") {
				jobs = append(jobs, loadJob{kind: "customers", w: w, d: d})
			}
			if o.wants("orders") {
				jobs = append(jobs, loadJob{kind: "orders", w: w, d: d})
			}
		}
		remaining[w].Store(int32(len(jobs) - n0))
	}
	if o.wants("items") {
		remaining[0].Store(int32(numItems / itemChunk))
	}
	var doneW atomic.Int32
	var outMu sync.Mutex
	progress := func(j loadJob) {
		idx := j.w
		if remaining[idx].Add(-1) != 0 {
			return
		}
		outMu.Lock()
		defer outMu.Unlock()
		if idx == 0 {
			fmt.Fprintf(o.Out, "Item Done. (%.1f s)\n", time.Since(start).Seconds())
			return
		}
		n := doneW.Add(1)
		fmt.Fprintf(o.Out, "Warehouse %d Done. [%d/%d] (%.1f s)\n", idx, n, nW, time.Since(start).Seconds())
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	queue := make(chan int)
	errc := make(chan error, o.Workers)
	var wg sync.WaitGroup
	now := time.Now().UTC().Format("2006-01-02 15:04:05")
	cons := LoadConstants(NewRand(o.Seed))
	for i := 0; i < o.Workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := db.Conn(ctx)
			if err != nil {
				errc <- o.Conn.explain(err)
				cancel()
				return
			}
			defer conn.Close()
			l := &loader{conn: conn, now: now}
			for ji := range queue {
				if err := l.runWithRetry(ctx, jobs[ji], o.Seed+uint64(ji)*0x9E3779B97F4A7C15, cons); err != nil {
					errc <- fmt.Errorf("loading %s w=%d d=%d: %w", jobs[ji].kind, jobs[ji].w, jobs[ji].d, err)
					cancel()
					return
				}
				progress(jobs[ji])
			}
		}()
	}
feed:
	for ji := range jobs {
		select {
		case queue <- ji:
		case <-ctx.Done():
			break feed
		}
	}
	close(queue)
	wg.Wait()
	close(errc)
	if err := <-errc; err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if !o.partial() {
		fmt.Fprintf(o.Out, "Data loaded (%.1f s); adding secondary indexes and foreign keys\n", time.Since(start).Seconds())
		if err := addIndexes(ctx, db, o.Workers); err != nil {
			return err
		}
	}
	fmt.Fprintf(o.Out, "\n...DATA LOADING COMPLETED SUCCESSFULLY. %d warehouses in %.1f s\n", nW, time.Since(start).Seconds())
	return nil
}

// prepareFull creates the database (refusing one with tables unless --drop)
// and the tables with primary keys only.
func prepareFull(ctx context.Context, o *LoadOpts, params map[string]string) (*sql.DB, error) {
	if err := prepareDatabase(ctx, o); err != nil {
		return nil, err
	}
	db, err := openDB(ctx, &o.Conn, true, params, o.Workers)
	if err != nil {
		return nil, err
	}
	for _, ddl := range tableDDL {
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
func preparePartial(ctx context.Context, o *LoadOpts, params map[string]string) (*sql.DB, error) {
	admin, err := openDB(ctx, &o.Conn, false, nil, 1)
	if err != nil {
		return nil, err
	}
	defer admin.Close()
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS "+quoteIdent(o.Conn.DB)); err != nil {
		return nil, err
	}
	db, err := openDB(ctx, &o.Conn, true, params, o.Workers)
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
	tables, err := listTables(ctx, db, o.Conn.DB)
	if err != nil {
		return fail(err)
	}
	if len(tables) > 0 {
		return db, nil
	}
	for _, ddl := range append(append([]string{}, tableDDL...), indexDDL...) {
		if _, err := conn.ExecContext(ctx, ddl); err != nil {
			return fail(fmt.Errorf("creating schema: %w", err))
		}
	}
	return db, nil
}

// addIndexes runs indexDDL on up to workers connections in parallel (each
// statement alters a different table).
func addIndexes(ctx context.Context, db *sql.DB, workers int) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	queue := make(chan string, len(indexDDL))
	for _, q := range indexDDL {
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
func prepareDatabase(ctx context.Context, o *LoadOpts) error {
	if o.Conn.DB == "" {
		return errors.New("-d database is required")
	}
	db, err := openDB(ctx, &o.Conn, false, nil, 1)
	if err != nil {
		return err
	}
	defer db.Close()
	tables, err := listTables(ctx, db, o.Conn.DB)
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
		if _, err := db.ExecContext(ctx, "DROP DATABASE "+quoteIdent(o.Conn.DB)); err != nil {
			return err
		}
	}
	_, err = db.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS "+quoteIdent(o.Conn.DB))
	return err
}

// loader generates rows for one job on one connection.
type loader struct {
	conn *sql.Conn
	rng  *Rand
	now  string // load timestamp for c_since, h_date, o_entry_d
}

// maxLoadRetries bounds how often one load job is retried after a deadlock or
// lock wait timeout. Parallel multi-row INSERTs into the same table can deadlock
// on InnoDB's insert-intention/gap locks even though the key ranges are disjoint.
const maxLoadRetries = 10

// runWithRetry runs one job in its own transaction, retrying it from the same
// random seed (so the rows are identical) when InnoDB reports a deadlock or a
// lock wait timeout.
func (l *loader) runWithRetry(ctx context.Context, j loadJob, seed uint64, cons Constants) error {
	for attempt := 0; ; attempt++ {
		l.rng = NewRand(seed)
		l.rng.C = cons
		err := l.run(ctx, j)
		if err == nil || !isRetryable(err) || attempt >= maxLoadRetries {
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
	b := newBatch(l.conn, "INSERT INTO item (i_id, i_im_id, i_name, i_price, i_data) VALUES ", loadBatchRows)
	for id := lo; id <= hi; id++ {
		b.begin()
		b.int(id)
		b.int(r.Uniform(1, 10000))
		b.str(func(x []byte) []byte { return r.AString(x, 14, 24) })
		b.fixed(r.Uniform(100, 10000), 2)
		b.str(func(x []byte) []byte { return r.DataString(x, 26, 50) })
		if err := b.end(ctx); err != nil {
			return err
		}
	}
	return b.flush(ctx)
}

// address appends street_1, street_2, city, state, zip.
func (l *loader) address(b *batchInsert) {
	r := l.rng
	b.str(func(x []byte) []byte { return r.AString(x, 10, 20) })
	b.str(func(x []byte) []byte { return r.AString(x, 10, 20) })
	b.str(func(x []byte) []byte { return r.AString(x, 10, 20) })
	b.str(r.State)
	b.str(r.Zip)
}

func (l *loader) warehouse(ctx context.Context, w int) error {
	r := l.rng
	b := newBatch(l.conn, "INSERT INTO warehouse (w_id, w_name, w_street_1, w_street_2, w_city, w_state, w_zip, w_tax, w_ytd) VALUES ", 1)
	b.begin()
	b.int(w)
	b.str(func(x []byte) []byte { return r.AString(x, 6, 10) })
	l.address(b)
	b.fixed(r.Uniform(0, 20), 2) // w_tax in [0.00, 0.20]: DECIMAL(4,2) as in tpcc-mysql
	b.fixed(30000000, 2)
	if err := b.end(ctx); err != nil {
		return err
	}
	b = newBatch(l.conn, "INSERT INTO district (d_id, d_w_id, d_name, d_street_1, d_street_2, d_city, d_state, d_zip, d_tax, d_ytd, d_next_o_id) VALUES ", districtsPerW)
	for d := 1; d <= districtsPerW; d++ {
		b.begin()
		b.int(d)
		b.int(w)
		b.str(func(x []byte) []byte { return r.AString(x, 6, 10) })
		l.address(b)
		b.fixed(r.Uniform(0, 20), 2)
		b.fixed(3000000, 2)
		b.int(ordersPerD + 1)
		if err := b.end(ctx); err != nil {
			return err
		}
	}
	return b.flush(ctx)
}

func (l *loader) stock(ctx context.Context, w, lo, hi int) error {
	r := l.rng
	b := newBatch(l.conn, "INSERT INTO stock (s_i_id, s_w_id, s_quantity, s_dist_01, s_dist_02, s_dist_03, s_dist_04, s_dist_05, "+
		"s_dist_06, s_dist_07, s_dist_08, s_dist_09, s_dist_10, s_ytd, s_order_cnt, s_remote_cnt, s_data) VALUES ", loadBatchRows)
	dist := func(x []byte) []byte { return r.AString(x, 24, 24) }
	for id := lo; id <= hi; id++ {
		b.begin()
		b.int(id)
		b.int(w)
		b.int(r.Uniform(10, 100))
		for k := 0; k < 10; k++ {
			b.str(dist)
		}
		b.int(0)
		b.int(0)
		b.int(0)
		b.str(func(x []byte) []byte { return r.DataString(x, 26, 50) })
		if err := b.end(ctx); err != nil {
			return err
		}
	}
	return b.flush(ctx)
}

func (l *loader) customers(ctx context.Context, w, d int) error {
	r := l.rng
	c := newBatch(l.conn, "INSERT INTO customer (c_id, c_d_id, c_w_id, c_first, c_middle, c_last, c_street_1, c_street_2, c_city, c_state, c_zip, "+
		"c_phone, c_since, c_credit, c_credit_lim, c_discount, c_balance, c_ytd_payment, c_payment_cnt, c_delivery_cnt, c_data) VALUES ", loadBatchRows)
	h := newBatch(l.conn, "INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data) VALUES ", loadBatchRows)
	for id := 1; id <= customersPerD; id++ {
		c.begin()
		c.int(id)
		c.int(d)
		c.int(w)
		c.str(func(x []byte) []byte { return r.AString(x, 8, 16) })
		c.lit("OE")
		// The first 1000 customers cover every last name once; the rest
		// are skewed by NURand so by-name lookups find 1..n rows (4.3.3.1).
		num := id - 1
		if id > 1000 {
			num = r.NURand(255, 0, 999, r.C.CLast)
		}
		c.str(func(x []byte) []byte { return LastName(x, num) })
		l.address(c)
		c.str(func(x []byte) []byte { return r.NString(x, 16, 16) })
		c.lit(l.now)
		if r.Uniform(1, 10) == 1 {
			c.lit("BC")
		} else {
			c.lit("GC")
		}
		c.int(50000)                 // c_credit_lim BIGINT
		c.fixed(r.Uniform(0, 50), 2) // c_discount in [0.00, 0.50], DECIMAL(4,2)
		c.fixed(-1000, 2)
		c.fixed(1000, 2)
		c.int(1)
		c.int(0)
		c.str(func(x []byte) []byte { return r.AString(x, 300, 500) })
		if err := c.end(ctx); err != nil {
			return err
		}

		h.begin()
		h.int(id)
		h.int(d)
		h.int(w)
		h.int(d)
		h.int(w)
		h.lit(l.now)
		h.fixed(1000, 2)
		h.str(func(x []byte) []byte { return r.AString(x, 12, 24) })
		if err := h.end(ctx); err != nil {
			return err
		}
	}
	if err := c.flush(ctx); err != nil {
		return err
	}
	return h.flush(ctx)
}

func (l *loader) orders(ctx context.Context, w, d int) error {
	r := l.rng
	o := newBatch(l.conn, "INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt, o_all_local) VALUES ", loadBatchRows)
	ol := newBatch(l.conn, "INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_delivery_d, "+
		"ol_quantity, ol_amount, ol_dist_info) VALUES ", loadOrderLineRows)
	no := newBatch(l.conn, "INSERT INTO new_orders (no_o_id, no_d_id, no_w_id) VALUES ", loadBatchRows)
	// o_c_id is a random permutation of the customers (4.3.3.1).
	perm := make([]int, customersPerD)
	for i := range perm {
		perm[i] = i + 1
	}
	r.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
	for id := 1; id <= ordersPerD; id++ {
		delivered := id < firstUndelivered
		cnt := r.Uniform(5, 15)
		o.begin()
		o.int(id)
		o.int(d)
		o.int(w)
		o.int(perm[id-1])
		o.lit(l.now)
		if delivered {
			o.int(r.Uniform(1, 10))
		} else {
			o.null()
		}
		o.int(cnt)
		o.int(1)
		if err := o.end(ctx); err != nil {
			return err
		}
		for n := 1; n <= cnt; n++ {
			ol.begin()
			ol.int(id)
			ol.int(d)
			ol.int(w)
			ol.int(n)
			ol.int(r.Uniform(1, numItems))
			ol.int(w)
			if delivered {
				ol.lit(l.now)
			} else {
				ol.null()
			}
			ol.int(5)
			if delivered {
				ol.fixed(0, 2)
			} else {
				ol.fixed(r.Uniform(1, 999999), 2)
			}
			ol.str(func(x []byte) []byte { return r.AString(x, 24, 24) })
			if err := ol.end(ctx); err != nil {
				return err
			}
		}
		if !delivered {
			no.begin()
			no.int(id)
			no.int(d)
			no.int(w)
			if err := no.end(ctx); err != nil {
				return err
			}
		}
	}
	for _, b := range []*batchInsert{o, ol, no} {
		if err := b.flush(ctx); err != nil {
			return err
		}
	}
	return nil
}
