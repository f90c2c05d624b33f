package mysqlwire

import (
	"context"
	"database/sql"
	"strconv"
)

// BatchInsert accumulates a multi-row INSERT as SQL text and sends it when it
// is large enough. Values are appended straight into one reused buffer (no
// placeholders, no per-value allocation); this is safe because the loader
// only generates digits and [A-Za-z0-9] strings, which need no escaping.
type BatchInsert struct {
	conn    *sql.Conn
	prefix  string // "INSERT INTO t (cols) VALUES "
	buf     []byte
	rows    int
	maxRows int
	first   bool // next value is the first of its row
}

const batchMaxBytes = 512 << 10

// NewBatchInsert starts a multi-row INSERT whose text begins with prefix
// ("INSERT INTO t (cols) VALUES "), sent every maxRows rows.
func NewBatchInsert(conn *sql.Conn, prefix string, maxRows int) *BatchInsert {
	return &BatchInsert{conn: conn, prefix: prefix, maxRows: maxRows, buf: make([]byte, 0, batchMaxBytes+8192)}
}

// Begin opens a new row tuple.
func (b *BatchInsert) Begin() {
	if b.rows == 0 {
		b.buf = append(b.buf[:0], b.prefix...)
	} else {
		b.buf = append(b.buf, ',')
	}
	b.buf = append(b.buf, '(')
	b.first = true
}

func (b *BatchInsert) sep() {
	if !b.first {
		b.buf = append(b.buf, ',')
	}
	b.first = false
}

// Int appends an integer value.
func (b *BatchInsert) Int(v int) {
	b.sep()
	b.buf = strconv.AppendInt(b.buf, int64(v), 10)
}

// Null appends NULL.
func (b *BatchInsert) Null() {
	b.sep()
	b.buf = append(b.buf, "NULL"...)
}

// Lit appends a quoted literal that needs no escaping.
func (b *BatchInsert) Lit(s string) {
	b.sep()
	b.buf = append(b.buf, '\'')
	b.buf = append(b.buf, s...)
	b.buf = append(b.buf, '\'')
}

// Str appends a quoted value produced by gen (which appends to its argument).
func (b *BatchInsert) Str(gen func([]byte) []byte) {
	b.sep()
	b.buf = append(b.buf, '\'')
	b.buf = gen(b.buf)
	b.buf = append(b.buf, '\'')
}

// Fixed appends v/10^scale with exactly scale decimals (money, tax rates).
func (b *BatchInsert) Fixed(v int, scale int) {
	b.sep()
	b.buf = AppendFixed(b.buf, int64(v), scale)
}

// End closes the row and flushes if the batch is full.
func (b *BatchInsert) End(ctx context.Context) error {
	b.buf = append(b.buf, ')')
	b.rows++
	if b.rows >= b.maxRows || len(b.buf) >= batchMaxBytes {
		return b.Flush(ctx)
	}
	return nil
}

// Flush sends the pending rows, if any.
func (b *BatchInsert) Flush(ctx context.Context) error {
	if b.rows == 0 {
		return nil
	}
	b.rows = 0
	_, err := b.conn.ExecContext(ctx, string(b.buf))
	return err
}

var pow10 = [...]int64{1, 10, 100, 1000, 10000, 100000}

// AppendFixed formats v scaled down by 10^scale, e.g. (12345, 2) -> "123.45".
func AppendFixed(b []byte, v int64, scale int) []byte {
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

// ParseFixed parses a decimal such as "-12.3456" into an integer scaled by
// 10^scale (extra digits are truncated). It avoids float conversions for
// values read back as DECIMAL text.
func ParseFixed(s []byte, scale int) int64 {
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
