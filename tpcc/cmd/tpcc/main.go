// Command tpcc is flushbench's TPC-C driver for MySQL/MariaDB: load, run
// (tpcc_start compatible output or JSON lines) and check.
package main

import (
	"os"

	"flushbench/tpcc/internal/tpcc"
)

func main() {
	os.Exit(tpcc.Main(os.Args[1:], os.Stdout, os.Stderr))
}
