//go:build !cgo || nolibmariadb

package libmariadb

import "flushbench/tpcc/internal/mysqlwire"

// Available says this build has the C client: not this one.
const Available = false

// NewOpener fails: this build has no C client.
func NewOpener(*mysqlwire.ConnOpts, string) (mysqlwire.SessionOpener, error) {
	return nil, ErrNotBuilt
}
