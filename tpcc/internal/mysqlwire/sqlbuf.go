package tpcc

import (
	"context"
	"database/sql"
	"strconv"
)

// batchInsert accumulates a multi-row INSERT as SQL text and sends it when it
// is large enough. Values are appended straight into one reused buffer (no
// placeholders, no per-value allocation); this is safe because the loader
// only generates digits and [A-Za-z0-9] strings, which need no escaping.
type batchInsert struct {
	conn    *sql.Conn
	prefix  string // "INSERT INTO t (cols) VALUES "
	buf     []byte
	rows    int
	maxRows int
	first   bool // next value is the first of its row
}

const batchMaxBytes = 512 << 10

func newBatch(conn *sql.Conn, prefix string, maxRows int) *batchInsert {
	return &batchInsert{conn: conn, prefix: prefix, maxRows: maxRows, buf: make([]byte, 0, batchMaxBytes+8192)}
}

// begin opens a new row tuple.
func (b *batchInsert) begin() {
	if b.rows == 0 {
		b.buf = append(b.buf[:0], b.prefix...)
	} else {
		b.buf = append(b.buf, ',')
	}
	b.buf = append(b.buf, '(')
	b.first = true
}

func (b *batchInsert) sep() {
	if !b.first {
		b.buf = append(b.buf, ',')
	}
	b.first = false
}

func (b *batchInsert) int(v int) {
	b.sep()
	b.buf = strconv.AppendInt(b.buf, int64(v), 10)
}

func (b *batchInsert) null() {
	b.sep()
	b.buf = append(b.buf, "NULL"...)
}

// lit appends a quoted literal that needs no escaping.
func (b *batchInsert) lit(s string) {
	b.sep()
	b.buf = append(b.buf, '\'')
	b.buf = append(b.buf, s...)
	b.buf = append(b.buf, '\'')
}

// str appends a quoted value produced by gen (which appends to its argument).
func (b *batchInsert) str(gen func([]byte) []byte) {
	b.sep()
	b.buf = append(b.buf, '\'')
	b.buf = gen(b.buf)
	b.buf = append(b.buf, '\'')
}

// fixed appends v/10^scale with exactly scale decimals (money, tax rates).
func (b *batchInsert) fixed(v int, scale int) {
	b.sep()
	b.buf = appendFixed(b.buf, int64(v), scale)
}

// end closes the row and flushes if the batch is full.
func (b *batchInsert) end(ctx context.Context) error {
	b.buf = append(b.buf, ')')
	b.rows++
	if b.rows >= b.maxRows || len(b.buf) >= batchMaxBytes {
		return b.flush(ctx)
	}
	return nil
}

// flush sends the pending rows, if any.
func (b *batchInsert) flush(ctx context.Context) error {
	if b.rows == 0 {
		return nil
	}
	b.rows = 0
	_, err := b.conn.ExecContext(ctx, string(b.buf))
	return err
}

var pow10 = [...]int64{1, 10, 100, 1000, 10000, 100000}

// appendFixed formats v scaled down by 10^scale, e.g. (12345, 2) -> "123.45".
func appendFixed(b []byte, v int64, scale int) []byte {
	if v < 0 {
		b = append(b, '-')
		v = -v
	}
	p := pow10[scale]
	b = strconv.AppendInt(b, v/p, 10)
	if scale == 0 {
		return b
	}
	b = append(b, '.')
	frac := v % p
	for d := p / 10; d > 0; d /= 10 {
		b = append(b, byte('0'+frac/d%10))
	}
	return b
}

// parseFixed parses a decimal such as "-12.3456" into an integer scaled by
// 10^scale (extra digits are truncated). It avoids float conversions for
// values read back as DECIMAL text.
func parseFixed(s []byte, scale int) int64 {
	var v int64
	neg := false
	frac := -1
	for _, c := range s {
		switch {
		case c == '-':
			neg = true
		case c == '.':
			frac = 0
		case c >= '0' && c <= '9':
			if frac >= 0 {
				if frac == scale {
					continue
				}
				frac++
			}
			v = v*10 + int64(c-'0')
		}
	}
	if frac < 0 {
		frac = 0
	}
	for ; frac < scale; frac++ {
		v *= 10
	}
	if neg {
		v = -v
	}
	return v
}
