package batched

import "flushbench/tpcc/internal/spec"

const (
	stockLevelNextOrder = "SELECT d_next_o_id FROM district WHERE d_w_id = ? AND d_id = ?"
	stockLevelLowStock  = "SELECT COUNT(DISTINCT s_i_id) FROM order_line, stock WHERE ol_w_id = ? AND ol_d_id = ? AND ol_o_id < ? AND ol_o_id >= ? " +
		"AND s_w_id = ol_w_id AND s_i_id = ol_i_id AND s_quantity < ?"
)

// stockLevel executes 2.8.2: distinct items of the district's last 20
// orders whose stock is below a threshold in [10, 20].
func (w *worker) stockLevel(home int) error {
	r := w.rng
	d := r.Uniform(1, spec.DistrictsPerW)
	threshold := r.Uniform(10, 20)
	var next int64
	if err := w.queryRow(stockLevelNextOrder, []any{&next}, home, d); err != nil {
		return err
	}
	var cnt int64
	if err := w.queryRow(stockLevelLowStock, []any{&cnt}, home, d, next, next-20, threshold); err != nil {
		return err
	}
	return w.commit()
}
