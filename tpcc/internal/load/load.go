// Package load is tpcc load: tpcc-mysql's schema populated per TPC-C 4.3 by
// parallel connections, whole or in tpcc_load's parts (-l, -m, -n).
package load

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"flushbench/tpcc/internal/spec"
)

// Job sizes: rows per job range and per multi-row INSERT.
const (
	stockChunk        = 10000
	itemChunk         = 10000
	loadBatchRows     = 1000
	loadOrderLineRows = 2000
)

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
func Load(ctx context.Context, o Opts) error {
	if err := o.normalize(); err != nil {
		return err
	}
	start := time.Now()
	db, err := prepare(ctx, &o)
	if err != nil {
		return err
	}
	defer db.Close()
	fmt.Fprintf(o.Out, "TPCC Data Load Started... (warehouses %d..%d, %d workers)\n", o.MinW, o.MaxW, o.Workers)
	jobs := planJobs(&o)
	if err := runJobs(ctx, db, &o, jobs, newProgress(&o, jobs, start)); err != nil {
		return err
	}
	if !o.partial() {
		fmt.Fprintf(o.Out, "Data loaded (%.1f s); adding secondary indexes and foreign keys\n", time.Since(start).Seconds())
		if err := addIndexes(ctx, db, o.Workers); err != nil {
			return err
		}
	}
	fmt.Fprintf(o.Out, "\n...DATA LOADING COMPLETED SUCCESSFULLY. %d warehouses in %.1f s\n", o.MaxW-o.MinW+1, time.Since(start).Seconds())
	return nil
}

// planJobs lists the jobs of the part being loaded: item ranges first, then
// per warehouse its row and districts, its stock ranges, and per district
// its customers and orders. A job's index seeds its generator.
func planJobs(o *Opts) []loadJob {
	var jobs []loadJob
	if o.wants("items") {
		for lo := 1; lo <= spec.NumItems; lo += itemChunk {
			jobs = append(jobs, loadJob{kind: "items", lo: lo, hi: lo + itemChunk - 1})
		}
	}
	for w := o.MinW; w <= o.MaxW; w++ {
		if o.wants("warehouse") {
			jobs = append(jobs, loadJob{kind: "warehouse", w: w})
			for lo := 1; lo <= spec.NumItems; lo += stockChunk {
				jobs = append(jobs, loadJob{kind: "stock", w: w, lo: lo, hi: lo + stockChunk - 1})
			}
		}
		for d := 1; d <= spec.DistrictsPerW; d++ {
			if o.wants("customers") {
				jobs = append(jobs, loadJob{kind: "customers", w: w, d: d})
			}
			if o.wants("orders") {
				jobs = append(jobs, loadJob{kind: "orders", w: w, d: d})
			}
		}
	}
	return jobs
}

// progress prints "Item Done." and "Warehouse N Done. [i/n]" as the last
// job of the items or of a warehouse finishes.
type progress struct {
	out       io.Writer
	start     time.Time
	nW        int
	remaining []atomic.Int32 // jobs left per warehouse; index 0: items
	doneW     atomic.Int32
	mu        sync.Mutex
}

func newProgress(o *Opts, jobs []loadJob, start time.Time) *progress {
	p := &progress{out: o.Out, start: start, nW: o.MaxW - o.MinW + 1, remaining: make([]atomic.Int32, o.MaxW+1)}
	for _, j := range jobs {
		p.remaining[j.w].Add(1)
	}
	return p
}

// done notes that job j finished.
func (p *progress) done(j loadJob) {
	idx := j.w
	if p.remaining[idx].Add(-1) != 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if idx == 0 {
		fmt.Fprintf(p.out, "Item Done. (%.1f s)\n", time.Since(p.start).Seconds())
		return
	}
	n := p.doneW.Add(1)
	fmt.Fprintf(p.out, "Warehouse %d Done. [%d/%d] (%.1f s)\n", idx, n, p.nW, time.Since(p.start).Seconds())
}

// runJobs feeds the jobs to o.Workers connections; the first error cancels
// the rest and is returned.
func runJobs(ctx context.Context, db *sql.DB, o *Opts, jobs []loadJob, prog *progress) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	queue := make(chan int)
	errc := make(chan error, o.Workers)
	var wg sync.WaitGroup
	now := time.Now().UTC().Format("2006-01-02 15:04:05")
	cons := spec.LoadConstants(spec.NewRand(o.Seed))
	for i := 0; i < o.Workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := loadWorker(ctx, db, o, jobs, queue, now, cons, prog); err != nil {
				errc <- err
				cancel()
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
	return ctx.Err()
}

// loadWorker runs queued jobs on one connection until the queue closes or
// a job fails.
func loadWorker(ctx context.Context, db *sql.DB, o *Opts, jobs []loadJob, queue <-chan int, now string, cons spec.Constants, prog *progress) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return o.Conn.Explain(err)
	}
	defer conn.Close()
	l := &loader{conn: conn, now: now}
	for ji := range queue {
		if err := l.runWithRetry(ctx, jobs[ji], o.Seed+uint64(ji)*0x9E3779B97F4A7C15, cons); err != nil {
			return fmt.Errorf("loading %s w=%d d=%d: %w", jobs[ji].kind, jobs[ji].w, jobs[ji].d, err)
		}
		prog.done(jobs[ji])
	}
	return nil
}
