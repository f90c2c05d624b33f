package batched

import (
	"bytes"
	"database/sql"
	"sort"

	"flushbench/tpcc/internal/mysqlwire"
	"flushbench/tpcc/internal/spec"
)

// orderLine is one order line's input and working state.
type orderLine struct {
	iid, supW, qty int
	price          int64 // cents
	found          bool
	original       bool // i_data contains "ORIGINAL"
	sQty           int
	brand          byte
	dist           [24]byte
	distLen        int
	amount         [16]byte // ol_amount as decimal text
	amountLen      int
}

// newOrderInput is a New-Order's input (TPC-C 2.4.1).
type newOrderInput struct {
	w, d, c, n int
	allLocal   bool
	lines      [spec.MaxOrderLines]orderLine
	groups     []int // distinct supply warehouses, ascending
}

// Queries whose text depends on the number of order lines are built once.
var (
	newOrderItems       [spec.MaxOrderLines + 1]string
	newOrderStock       [spec.MaxOrderLines + 1]string
	newOrderInsertLines [spec.MaxOrderLines + 1]string
)

func init() {
	for n := 1; n <= spec.MaxOrderLines; n++ {
		newOrderItems[n] = "SELECT i_id, i_price, i_name, i_data FROM item WHERE i_id IN " + inList(n)
		// ELT picks s_dist_<d_id> server-side: one statement per line count
		// instead of one per (line count, district). FORCE INDEX: with long
		// IN lists MariaDB 10.11 otherwise may choose to scan the whole
		// s_w_id range (100k rows) or go through the s_i_id index.
		newOrderStock[n] = "SELECT s_i_id, s_quantity, s_data, ELT(?, s_dist_01, s_dist_02, s_dist_03, s_dist_04, s_dist_05, " +
			"s_dist_06, s_dist_07, s_dist_08, s_dist_09, s_dist_10) FROM stock FORCE INDEX (PRIMARY) WHERE s_w_id = ? AND s_i_id IN " + inList(n) + " FOR UPDATE"
		q := "INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_dist_info) VALUES "
		for i := 0; i < n; i++ {
			if i > 0 {
				q += ","
			}
			q += "(?,?,?,?,?,?,?,?,?)"
		}
		newOrderInsertLines[n] = q
	}
}

const (
	newOrderCustomer       = "SELECT c_discount, c_last, c_credit, w_tax FROM customer, warehouse WHERE w_id = ? AND c_w_id = w_id AND c_d_id = ? AND c_id = ?"
	newOrderStockUpdate    = "UPDATE stock SET s_quantity = ?, s_ytd = s_ytd + ?, s_order_cnt = s_order_cnt + 1, s_remote_cnt = s_remote_cnt + ? WHERE s_w_id = ? AND s_i_id = ?"
	newOrderDistrict       = "SELECT d_next_o_id, d_tax FROM district WHERE d_w_id = ? AND d_id = ? FOR UPDATE"
	newOrderDistrictUpdate = "UPDATE district SET d_next_o_id = ? WHERE d_w_id = ? AND d_id = ?"
	newOrderInsertOrder    = "INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_ol_cnt, o_all_local) VALUES (?, ?, ?, ?, NOW(), ?, ?)"
	newOrderInsertNewOrder = "INSERT INTO new_orders (no_o_id, no_d_id, no_w_id) VALUES (?, ?, ?)"
)

var original = []byte("ORIGINAL")

// genNewOrder draws the input per 2.4.1: NURand customer and items, 5-15
// lines, 1% remote supply per line (W>1), 1% of orders carry an unused item
// id in the last line and must roll back. Item ids within an order are kept
// distinct so each stock row is touched once (lines are otherwise
// independent draws).
func (w *worker) genNewOrder(home int) {
	r := w.rng
	in := &w.newOrderIn
	in.w = home
	in.d = r.Uniform(1, spec.DistrictsPerW)
	in.c = r.CustomerID()
	in.n = r.Uniform(5, spec.MaxOrderLines)
	in.allLocal = true
	rbk := r.Uniform(1, 100) == 1
	for i := 0; i < in.n; i++ {
		l := &in.lines[i]
		*l = orderLine{}
	draw:
		for {
			l.iid = r.ItemID()
			for j := 0; j < i; j++ {
				if in.lines[j].iid == l.iid {
					continue draw
				}
			}
			break
		}
		l.supW = home
		if w.env.W > 1 && r.Uniform(1, 100) == 1 {
			l.supW = w.otherWarehouse(home)
			in.allLocal = false
		}
		l.qty = r.Uniform(1, 10)
	}
	if rbk {
		in.lines[in.n-1].iid = spec.UnusedItemID
	}
	in.groups = in.groups[:0]
	for i := 0; i < in.n; i++ {
		s := in.lines[i].supW
		dup := false
		for _, g := range in.groups {
			if g == s {
				dup = true
				break
			}
		}
		if !dup {
			in.groups = append(in.groups, s)
		}
	}
	sort.Ints(in.groups)
}

// newOrder executes 2.4.2. Statement order is chosen to keep the hot
// district row locked briefly: items and stock are read and locked first,
// then d_next_o_id is taken and the order rows inserted right before commit.
// Stock rows are locked through IN lists in ascending (w_id, i_id) order, so
// concurrent New-Orders do not deadlock on stock.
func (w *worker) newOrder() error {
	in := &w.newOrderIn
	allFound, err := w.readItems(in)
	if err != nil {
		return err
	}
	if !allFound {
		// The 1% unused item: the business transaction rolls back (and
		// still counts as completed, as in tpcc-mysql and TPC-C 2.4.2.3).
		return w.Rollback()
	}
	var cDiscount, cLast, cCredit, wTax []byte
	if err := w.queryRow(newOrderCustomer, []any{&cDiscount, &cLast, &cCredit, &wTax}, in.w, in.d, in.c); err != nil {
		return err
	}
	for _, sw := range in.groups {
		if err := w.lockStock(in, sw); err != nil {
			return err
		}
	}
	total, err := w.updateStock(in)
	if err != nil {
		return err
	}
	dTax, err := w.insertOrder(in)
	if err != nil {
		return err
	}
	// Total = sum(ol_amount) * (1 - c_discount) * (1 + w_tax + d_tax); the
	// terminal output is not displayed, but the value is computed per spec.
	_ = float64(total) * (1 - float64(mysqlwire.ParseFixed(cDiscount, 4))/1e4) *
		(1 + float64(mysqlwire.ParseFixed(wTax, 4)+mysqlwire.ParseFixed(dTax, 4))/1e4)
	return w.commit()
}

// readItems reads all lines' items in one round trip and reports whether
// every item id was found.
func (w *worker) readItems(in *newOrderInput) (bool, error) {
	n := in.n
	args := w.args[:0]
	for i := 0; i < n; i++ {
		args = append(args, in.lines[i].iid)
	}
	rows, err := w.query(newOrderItems[n], args...)
	if err != nil {
		return false, err
	}
	var iid int64
	var price, name, data sql.RawBytes
	found := 0
	for rows.Next() {
		if err := rows.Scan(&iid, &price, &name, &data); err != nil {
			rows.Close()
			return false, err
		}
		for i := 0; i < n; i++ {
			l := &in.lines[i]
			if int64(l.iid) == iid {
				l.found = true
				l.price = mysqlwire.ParseFixed(price, 2)
				l.original = bytes.Contains(data, original)
				found++
				break
			}
		}
	}
	if err := rows.Close(); err != nil {
		return false, err
	}
	return found == n, nil
}

// lockStock reads and locks the stock rows of the lines supplied by
// warehouse sw: one locking read per supply warehouse (almost always one).
func (w *worker) lockStock(in *newOrderInput, sw int) error {
	n := in.n
	args := w.args[:0]
	args = append(args, in.d, sw)
	for i := 0; i < n; i++ {
		if in.lines[i].supW == sw {
			args = append(args, in.lines[i].iid)
		}
	}
	rows, err := w.query(newOrderStock[len(args)-2], args...)
	if err != nil {
		return err
	}
	var sIID, sQty int64
	var sData, sDist sql.RawBytes
	for rows.Next() {
		if err := rows.Scan(&sIID, &sQty, &sData, &sDist); err != nil {
			rows.Close()
			return err
		}
		for i := 0; i < n; i++ {
			l := &in.lines[i]
			if l.supW == sw && int64(l.iid) == sIID {
				l.sQty = int(sQty)
				l.distLen = copy(l.dist[:], sDist)
				l.brand = 'G'
				if l.original && bytes.Contains(sData, original) {
					l.brand = 'B'
				}
				break
			}
		}
	}
	return rows.Close()
}

// updateStock writes each line's stock update and returns the order's
// amount in cents (each line's ol_amount is kept as text for its insert).
func (w *worker) updateStock(in *newOrderInput) (int64, error) {
	var total int64
	for i := 0; i < in.n; i++ {
		l := &in.lines[i]
		q := l.sQty - l.qty
		if l.sQty < l.qty+10 {
			q += 91
		}
		remote := 0
		if l.supW != in.w {
			remote = 1
		}
		if _, err := w.exec(newOrderStockUpdate, q, l.qty, remote, l.supW, l.iid); err != nil {
			return 0, err
		}
		amt := int64(l.qty) * l.price
		total += amt
		l.amountLen = len(mysqlwire.AppendFixed(l.amount[:0], amt, 2))
	}
	return total, nil
}

// insertOrder takes the district's next order id and inserts the order,
// new-order and order-line rows; it returns d_tax.
func (w *worker) insertOrder(in *newOrderInput) ([]byte, error) {
	n := in.n
	var oID int64
	var dTax []byte
	if err := w.queryRow(newOrderDistrict, []any{&oID, &dTax}, in.w, in.d); err != nil {
		return nil, err
	}
	if _, err := w.exec(newOrderDistrictUpdate, oID+1, in.w, in.d); err != nil {
		return nil, err
	}
	allLocal := 0
	if in.allLocal {
		allLocal = 1
	}
	if _, err := w.exec(newOrderInsertOrder, oID, in.d, in.w, in.c, n, allLocal); err != nil {
		return nil, err
	}
	if _, err := w.exec(newOrderInsertNewOrder, oID, in.d, in.w); err != nil {
		return nil, err
	}
	args := w.args[:0]
	for i := 0; i < n; i++ {
		l := &in.lines[i]
		args = append(args, oID, in.d, in.w, i+1, l.iid, l.supW, l.qty, l.amount[:l.amountLen], l.dist[:l.distLen])
	}
	if _, err := w.exec(newOrderInsertLines[n], args...); err != nil {
		return nil, err
	}
	return dTax, nil
}
