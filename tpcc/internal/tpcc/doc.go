// Package tpcc is flushbench's TPC-C driver: schema and parallel loader
// (TPC-C 4.3), the tpcc-mysql style run loop (TPC-C clause 2 transactions
// dealt from a 23-card deck per connection, no think time) with
// tpcc_start-compatible text output or JSON lines, and the consistency check
// (3.3.2).
//
// Decisions worth knowing when reading results:
//
//   - Counts are completed transactions (sc+lt). New-Orders that roll back by
//     design (the 1% with an unused item id) count as completed, in the
//     intervals, in sc/lt and in TpmC, as in tpcc-mysql; TPC-C 2.4.2.3
//     treats them as completed business transactions too.
//   - sc/lt use tpcc-mysql's thresholds 5/5/5/80/20 interpreted in
//     milliseconds, which is what tpcc_start effectively does (see
//     testdata: New-Order averaging 54 ms is "lt" 99.9% of the time).
//     run --late-unit s applies them in seconds (the TPC-C spec limits).
//   - Response time of a transaction includes its deadlock/lock-wait
//     retries; rt counts retries, fl counts transactions that failed
//     (non-retryable error or more than 20 retries).
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
//   - Statement shapes: item and stock rows of a New-Order are read with one
//     IN-list statement each (stock FOR UPDATE, in key order), order lines
//     are inserted with one multi-row INSERT; stock updates stay one per
//     line. The rows read and written are those of TPC-C; only round trips
//     are fewer. Sessions run with autocommit=0, so no BEGIN round trip.
//   - Item ids within one order are distinct.
package tpcc
