package tpccmysql

// Statements of tpcc-mysql mode: the 35 texts tpcc_start prepares on every
// connection, character for character, so the server sees the same
// statements (and the same performance_schema digests). The per-transaction
// order, round trips and commit points are in testdata/statement-shapes.txt
// (a real tpcc_start run's general log); TestTpccMysqlStatementStream checks
// ours against it.
const (
	newOrderCustomer = iota
	newOrderDistrict
	newOrderDistrictUpdate
	newOrderInsertOrder
	newOrderInsertNewOrder
	newOrderItem
	newOrderStock
	newOrderStockUpdate
	newOrderInsertLine
	paymentWarehouseUpdate
	paymentWarehouse
	paymentDistrictUpdate
	paymentDistrict
	paymentCountByName
	paymentCustomerByName
	paymentCustomer
	paymentCustomerData
	paymentCustomerUpdateBadCredit
	paymentCustomerUpdate
	paymentInsertHistory
	orderStatusCountByName
	orderStatusCustomerByName
	orderStatusCustomer
	orderStatusLastOrder
	orderStatusLines
	deliveryOldestNewOrder
	deliveryDeleteNewOrder
	deliveryOrderCustomer
	deliveryUpdateOrder
	deliveryUpdateLines
	deliveryLinesTotal
	deliveryUpdateCustomer
	stockLevelNextOrder
	stockLevelRecentItems
	stockLevelLowStock
	// NumStatements is how many statements each connection prepares.
	NumStatements
)

var statementTexts = [NumStatements]string{
	newOrderCustomer:               "SELECT c_discount, c_last, c_credit, w_tax FROM customer, warehouse WHERE w_id = ? AND c_w_id = w_id AND c_d_id = ? AND c_id = ?",
	newOrderDistrict:               "SELECT d_next_o_id, d_tax FROM district WHERE d_id = ? AND d_w_id = ? FOR UPDATE",
	newOrderDistrictUpdate:         "UPDATE district SET d_next_o_id = ? + 1 WHERE d_id = ? AND d_w_id = ?",
	newOrderInsertOrder:            "INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_ol_cnt, o_all_local) VALUES(?, ?, ?, ?, ?, ?, ?)",
	newOrderInsertNewOrder:         "INSERT INTO new_orders (no_o_id, no_d_id, no_w_id) VALUES (?,?,?)",
	newOrderItem:                   "SELECT i_price, i_name, i_data FROM item WHERE i_id = ?",
	newOrderStock:                  "SELECT s_quantity, s_data, s_dist_01, s_dist_02, s_dist_03, s_dist_04, s_dist_05, s_dist_06, s_dist_07, s_dist_08, s_dist_09, s_dist_10 FROM stock WHERE s_i_id = ? AND s_w_id = ? FOR UPDATE",
	newOrderStockUpdate:            "UPDATE stock SET s_quantity = ? WHERE s_i_id = ? AND s_w_id = ?",
	newOrderInsertLine:             "INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_dist_info) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
	paymentWarehouseUpdate:         "UPDATE warehouse SET w_ytd = w_ytd + ? WHERE w_id = ?",
	paymentWarehouse:               "SELECT w_street_1, w_street_2, w_city, w_state, w_zip, w_name FROM warehouse WHERE w_id = ?",
	paymentDistrictUpdate:          "UPDATE district SET d_ytd = d_ytd + ? WHERE d_w_id = ? AND d_id = ?",
	paymentDistrict:                "SELECT d_street_1, d_street_2, d_city, d_state, d_zip, d_name FROM district WHERE d_w_id = ? AND d_id = ?",
	paymentCountByName:             "SELECT count(c_id) FROM customer WHERE c_w_id = ? AND c_d_id = ? AND c_last = ?",
	paymentCustomerByName:          "SELECT c_id FROM customer WHERE c_w_id = ? AND c_d_id = ? AND c_last = ? ORDER BY c_first",
	paymentCustomer:                "SELECT c_first, c_middle, c_last, c_street_1, c_street_2, c_city, c_state, c_zip, c_phone, c_credit, c_credit_lim, c_discount, c_balance, c_since FROM customer WHERE c_w_id = ? AND c_d_id = ? AND c_id = ? FOR UPDATE",
	paymentCustomerData:            "SELECT c_data FROM customer WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?",
	paymentCustomerUpdateBadCredit: "UPDATE customer SET c_balance = ?, c_data = ? WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?",
	paymentCustomerUpdate:          "UPDATE customer SET c_balance = ? WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?",
	paymentInsertHistory:           "INSERT INTO history(h_c_d_id, h_c_w_id, h_c_id, h_d_id, h_w_id, h_date, h_amount, h_data) VALUES(?, ?, ?, ?, ?, ?, ?, ?)",
	orderStatusCountByName:         "SELECT count(c_id) FROM customer WHERE c_w_id = ? AND c_d_id = ? AND c_last = ?",
	orderStatusCustomerByName:      "SELECT c_balance, c_first, c_middle, c_last FROM customer WHERE c_w_id = ? AND c_d_id = ? AND c_last = ? ORDER BY c_first",
	orderStatusCustomer:            "SELECT c_balance, c_first, c_middle, c_last FROM customer WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?",
	orderStatusLastOrder:           "SELECT o_id, o_entry_d, COALESCE(o_carrier_id,0) FROM orders WHERE o_w_id = ? AND o_d_id = ? AND o_c_id = ? AND o_id = (SELECT MAX(o_id) FROM orders WHERE o_w_id = ? AND o_d_id = ? AND o_c_id = ?)",
	orderStatusLines:               "SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d FROM order_line WHERE ol_w_id = ? AND ol_d_id = ? AND ol_o_id = ?",
	deliveryOldestNewOrder:         "SELECT COALESCE(MIN(no_o_id),0) FROM new_orders WHERE no_d_id = ? AND no_w_id = ?",
	deliveryDeleteNewOrder:         "DELETE FROM new_orders WHERE no_o_id = ? AND no_d_id = ? AND no_w_id = ?",
	deliveryOrderCustomer:          "SELECT o_c_id FROM orders WHERE o_id = ? AND o_d_id = ? AND o_w_id = ?",
	deliveryUpdateOrder:            "UPDATE orders SET o_carrier_id = ? WHERE o_id = ? AND o_d_id = ? AND o_w_id = ?",
	deliveryUpdateLines:            "UPDATE order_line SET ol_delivery_d = ? WHERE ol_o_id = ? AND ol_d_id = ? AND ol_w_id = ?",
	deliveryLinesTotal:             "SELECT SUM(ol_amount) FROM order_line WHERE ol_o_id = ? AND ol_d_id = ? AND ol_w_id = ?",
	deliveryUpdateCustomer:         "UPDATE customer SET c_balance = c_balance + ? , c_delivery_cnt = c_delivery_cnt + 1 WHERE c_id = ? AND c_d_id = ? AND c_w_id = ?",
	stockLevelNextOrder:            "SELECT d_next_o_id FROM district WHERE d_id = ? AND d_w_id = ?",
	stockLevelRecentItems:          "SELECT DISTINCT ol_i_id FROM order_line WHERE ol_w_id = ? AND ol_d_id = ? AND ol_o_id < ? AND ol_o_id >= (? - 20)",
	stockLevelLowStock:             "SELECT count(*) FROM stock WHERE s_w_id = ? AND s_i_id = ? AND s_quantity < ?",
}
