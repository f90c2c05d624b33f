// Package libmariadb is tpcc-mysql mode's C client (tpcc run --client
// libmariadb): the MariaDB Connector/C library tpcc_start links (Debian's
// libmariadb3; building needs libmariadb-dev), called through cgo the way
// tpcc_start calls it. Each statement is prepared once per connection
// (mysql_stmt_prepare); each execution binds its parameters
// (mysql_stmt_bind_param: integers as 4-byte MYSQL_TYPE_LONG, floats as
// 4-byte MYSQL_TYPE_FLOAT, text as MYSQL_TYPE_STRING), executes, stores the
// whole result client side (mysql_stmt_store_result), binds the result
// columns and fetches row by row, then frees the result; COMMIT and
// ROLLBACK are mysql_commit and mysql_rollback. The workload keeps each
// connection on one OS thread, which blocks in the library's read until
// the server answers, as each tpcc_start thread does.
//
// Result columns are bound once per statement by their type: integer
// columns as 8-byte integers (read back as int64), all others as text
// (read back as []byte, DECIMAL included), so the workload's conversions
// (mysqlwire.AsInt, AsFloat, ParseFixed) see what they see from the Go
// client.
//
// Without cgo, or built with -tags nolibmariadb, the package is a stub:
// Available is false and Open says how to get the client.
package libmariadb
