package libmariadb

import "database/sql/driver"

// columnValue is one fetched column as the workload reads it from either
// client: an integer column's value as int64, another column's text (the
// first n bytes of its buffer; DECIMAL, dates and strings alike) as
// []byte, and NULL (n < 0) as nil.
func columnValue(isInt bool, i int64, buf []byte, n int64) driver.Value {
	switch {
	case n < 0:
		return nil
	case isInt:
		return i
	}
	return buf[:n:n]
}
