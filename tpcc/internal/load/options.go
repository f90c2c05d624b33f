package load

import (
	"errors"
	"fmt"
	"io"

	"flushbench/tpcc/internal/mysqlwire"
)

// Opts configures tpcc load.
type Opts struct {
	Conn    mysqlwire.ConnOpts
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
func (o *Opts) partial() bool {
	return o.Part != PartAll || o.MinW > 1 || (o.MaxW > 0 && o.MaxW != o.W)
}

// wants reports whether job kind k belongs to the part being loaded.
func (o *Opts) wants(kind string) bool {
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

// normalize fills the defaults and rejects impossible part/range choices.
func (o *Opts) normalize() error {
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
	return nil
}
