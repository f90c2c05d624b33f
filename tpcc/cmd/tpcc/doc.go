// Command tpcc is flushbench's TPC-C driver: schema and parallel loader
// (tpcc-mysql's schema, TPC-C 4.3 data), the run loop with tpcc_start
// compatible text output or JSON lines, and the consistency check (3.3.2).
//
// tpcc run has two workloads (docs/tpcc.md has the details and every
// decision where tpcc-mysql deviates from the TPC-C spec):
//
//   - ModeTpccMysql (default): tpcc-mysql's own workload, so TpmC is
//     comparable with tpcc_start's. The 35 statements tpcc_start prepares,
//     issued per transaction type in the same order with the same round
//     trips, lock order and commit points (Delivery commits per district,
//     Stock-Level runs one count(*) per distinct item, New-Order one
//     item/stock/update/insert per line); one 23-card deck shared by all
//     connections; any error retried with the same input up to 2000 times.
//     Implemented in internal/workload/tpccmysql on a
//     mysqlwire.PreparedSession of either client (--client): libmariadb,
//     the C library tpcc_start links, through cgo (internal/libmariadb),
//     or go, go-sql-driver's Conn/Stmt below database/sql (internal/mysqlwire's
//     Session). Checked through each against a real tpcc_start run's
//     general log (testdata/statement-shapes.txt).
//   - ModeBatched: the same business transactions in fewer round trips
//     (IN lists, multi-row inserts, one join for Stock-Level, one commit per
//     Delivery) with the spec's data updates. A different workload: its TpmC
//     is not comparable with tpcc_start's (internal/workload/batched).
//
// Decisions common to both modes:
//
//   - Counts are completed transactions (sc+lt). New-Orders that roll back by
//     design (the 1% with an unused item id) count as completed, in the
//     intervals, in sc/lt and in TpmC, as in tpcc-mysql; TPC-C 2.4.2.3
//     treats them as completed business transactions too.
//   - sc/lt: on time when the response time is below tpcc-mysql's limits
//     5/5/5/80/20 in milliseconds (-0..-4 override them), which is what
//     tpcc_start does (see testdata: New-Order averaging 54 ms is "lt" 99.9%
//     of the time). run --late-unit s applies them in seconds (the TPC-C
//     spec limits).
//   - Response time of a transaction includes its retries; rt counts failed
//     attempts, fl counts transactions that failed for good (tpcc-mysql
//     mode: 2000 attempts; batched: non-retryable error or more than 20
//     deadlock/lock-wait retries).
//   - JSON intervals are on absolute ticks from the run start; ramp-up gets
//     its own intervals (phase "warmup"), with a boundary exactly at the end
//     of ramp-up. Summary totals, retries and errors cover the measurement
//     phase only.
//   - Exit codes of run: 0 success (also after SIGINT/SIGTERM once at least
//     one full measurement interval was reported; the summary then has
//     "interrupted":true and measure_s is the time actually measured),
//     1 error, 2 usage, 3 server lost mid-run (intervals already printed
//     stay; no summary), 130 interrupted before the first full measurement
//     interval (summary still printed).
//   - Options follow getopt as tpcc_load/tpcc_start do (-w10 and -w 10);
//     flushbench's own options are long (--json, --mode, --workers).
//
// Packages (internal/): getopt (tpcc_start's option syntax), mysqlwire
// (connections, errors, transport, the session interface and the Go
// client's Session below database/sql, the loader's INSERT buffer),
// libmariadb (the C client), spec (transaction types, deck, random
// functions, cardinalities), schema, load, check, measure (histogram,
// counters), report (text/JSON sinks, -f/-t files), workload (Worker, Env)
// with workload/tpccmysql and workload/batched (one file per transaction),
// and run (the run loop). This package is the CLI only.
package main
