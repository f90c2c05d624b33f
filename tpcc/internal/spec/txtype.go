package spec

// Cardinalities from TPC-C 4.3 / 1.2, and New-Order's line limits (2.4.1).
const (
	NumItems         = 100000
	DistrictsPerW    = 10
	CustomersPerD    = 3000
	OrdersPerD       = 3000
	FirstUndelivered = 2101 // orders >= this are in new_orders, undelivered
	MaxOrderLines    = 15
	// UnusedItemID is the item id of the 1% of New-Orders that roll back.
	UnusedItemID = NumItems + 1
)

// TxType identifies one of the five TPC-C transactions. The numeric values
// are the indexes tpcc-mysql prints in <Raw Results> ([0]..[4]).
type TxType int

const (
	TxNewOrder TxType = iota
	TxPayment
	TxOrderStatus
	TxDelivery
	TxStockLevel
	// NumTxTypes is the number of transaction types.
	NumTxTypes
)

// Names are the JSON keys for each type.
var Names = [NumTxTypes]string{"new_order", "payment", "order_status", "delivery", "stock_level"}

// Labels are the names tpcc-mysql uses in its constraint check.
var Labels = [NumTxTypes]string{"New-Order", "Payment", "Order-Status", "Delivery", "Stock-Level"}

// String is the type's JSON key.
func (t TxType) String() string { return Names[t] }

// LateThresholds are tpcc-mysql's per-type response-time limits (in its
// unit, milliseconds), printed as "(5)" etc.; tpcc run -0..-4 override them.
var LateThresholds = [NumTxTypes]int{5, 5, 5, 80, 20}
