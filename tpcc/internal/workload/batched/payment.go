package batched

import (
	"database/sql"
	"strconv"

	"flushbench/tpcc/internal/mysqlwire"
	"flushbench/tpcc/internal/spec"
)

const (
	paymentWarehouseDistrict = "SELECT w_name, w_street_1, w_street_2, w_city, w_state, w_zip, d_name, d_street_1, d_street_2, d_city, d_state, d_zip " +
		"FROM warehouse, district WHERE w_id = ? AND d_w_id = w_id AND d_id = ?"
	customerIDsByName = "SELECT c_id FROM customer WHERE c_w_id = ? AND c_d_id = ? AND c_last = ? ORDER BY c_first"
	paymentCustomer   = "SELECT c_first, c_middle, c_last, c_street_1, c_street_2, c_city, c_state, c_zip, c_phone, c_since, " +
		"c_credit, c_credit_lim, c_discount, c_balance, c_data FROM customer WHERE c_w_id = ? AND c_d_id = ? AND c_id = ? FOR UPDATE"
	paymentCustomerUpdate          = "UPDATE customer SET c_balance = c_balance - ?, c_ytd_payment = c_ytd_payment + ?, c_payment_cnt = c_payment_cnt + 1 WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?"
	paymentCustomerUpdateBadCredit = "UPDATE customer SET c_balance = c_balance - ?, c_ytd_payment = c_ytd_payment + ?, c_payment_cnt = c_payment_cnt + 1, c_data = ? WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?"
	paymentInsertHistory           = "INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data) VALUES (?, ?, ?, ?, ?, NOW(), ?, ?)"
	paymentDistrictUpdate          = "UPDATE district SET d_ytd = d_ytd + ? WHERE d_w_id = ? AND d_id = ?"
	paymentWarehouseUpdate         = "UPDATE warehouse SET w_ytd = w_ytd + ? WHERE w_id = ?"
)

// customerByName returns the id of the customer at position ceil(n/2) among
// those with last name last, ordered by c_first (2.5.2.2, 2.6.2.2).
func (w *worker) customerByName(wID, dID int, last []byte) (int, error) {
	rows, err := w.query(customerIDsByName, wID, dID, last)
	if err != nil {
		return 0, err
	}
	w.ids = w.ids[:0]
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return 0, err
		}
		w.ids = append(w.ids, id)
	}
	if err := rows.Close(); err != nil {
		return 0, err
	}
	if len(w.ids) == 0 {
		return 0, sql.ErrNoRows
	}
	return int(w.ids[(len(w.ids)-1)/2]), nil
}

// payment executes 2.5.2 with inputs per 2.5.1: 85% home customer, 15% a
// customer of a random remote warehouse (when W>1); 60% selected by last
// name. The warehouse and district names are read without locks (they never
// change), and the contended w_ytd / d_ytd updates come last so those hot
// rows stay locked only until the commit that follows.
func (w *worker) payment(home int) error {
	r := w.rng
	d := r.Uniform(1, spec.DistrictsPerW)
	cW, cD := home, d
	if w.env.W > 1 && r.Uniform(1, 100) > 85 {
		cW, cD = w.otherWarehouse(home), r.Uniform(1, spec.DistrictsPerW)
	}
	amount := int64(r.Uniform(100, 500000)) // cents
	byName := r.Uniform(1, 100) <= 60
	var cID int
	if byName {
		w.buf = spec.LastName(w.buf[:0], r.LastNameNum())
	} else {
		cID = r.CustomerID()
	}

	var wName, dName, x []byte
	if err := w.queryRow(paymentWarehouseDistrict, []any{&wName, &x, &x, &x, &x, &x, &dName, &x, &x, &x, &x, &x}, home, d); err != nil {
		return err
	}
	if byName {
		id, err := w.customerByName(cW, cD, w.buf)
		if err != nil {
			return err
		}
		cID = id
	}
	var credit, cData []byte
	if err := w.queryRow(paymentCustomer, []any{&x, &x, &x, &x, &x, &x, &x, &x, &x, &x, &credit, &x, &x, &x, &cData}, cW, cD, cID); err != nil {
		return err
	}
	var amt [16]byte
	amtB := mysqlwire.AppendFixed(amt[:0], amount, 2)
	if len(credit) == 2 && credit[0] == 'B' {
		// Bad credit: prepend the payment to c_data, keeping 500 chars.
		b := w.buf[:0]
		b = strconv.AppendInt(b, int64(cID), 10)
		b = append(b, ' ')
		b = strconv.AppendInt(b, int64(cD), 10)
		b = append(b, ' ')
		b = strconv.AppendInt(b, int64(cW), 10)
		b = append(b, ' ')
		b = strconv.AppendInt(b, int64(d), 10)
		b = append(b, ' ')
		b = strconv.AppendInt(b, int64(home), 10)
		b = append(b, ' ')
		b = append(b, amtB...)
		b = append(b, '|')
		b = append(b, cData...)
		if len(b) > 500 {
			b = b[:500]
		}
		w.buf = b
		if _, err := w.exec(paymentCustomerUpdateBadCredit, amtB, amtB, b, cW, cD, cID); err != nil {
			return err
		}
	} else if _, err := w.exec(paymentCustomerUpdate, amtB, amtB, cW, cD, cID); err != nil {
		return err
	}
	// h_data = w_name + 4 spaces + d_name (2.5.2.2)
	var hd [32]byte
	h := append(hd[:0], wName...)
	h = append(h, "    "...)
	h = append(h, dName...)
	if _, err := w.exec(paymentInsertHistory, cID, cD, cW, d, home, amtB, h); err != nil {
		return err
	}
	if _, err := w.exec(paymentDistrictUpdate, amtB, home, d); err != nil {
		return err
	}
	if _, err := w.exec(paymentWarehouseUpdate, amtB, home); err != nil {
		return err
	}
	return w.commit()
}
