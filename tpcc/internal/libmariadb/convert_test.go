package libmariadb

import (
	"database/sql/driver"
	"reflect"
	"testing"
)

// columnValue turns a fetched column into what the Go client hands the
// workload for the same column.
func TestColumnValue(t *testing.T) {
	buf := []byte("12.50garbage past the fetched length")
	cases := []struct {
		name  string
		isInt bool
		i     int64
		n     int64
		want  driver.Value
	}{
		{"integer column", true, 70000, 8, int64(70000)},
		{"negative integer", true, -3, 8, int64(-3)},
		{"text column: its fetched length only", false, 0, 5, []byte("12.50")},
		{"empty text is not NULL", false, 0, 0, []byte{}},
		{"NULL text", false, 0, -1, nil},
		{"NULL integer", true, 0, -1, nil},
	}
	for _, c := range cases {
		got := columnValue(c.isInt, c.i, buf, c.n)
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %#v, want %#v", c.name, got, c.want)
		}
	}
	// A text value cannot grow into the rest of the buffer.
	v := columnValue(false, 0, buf, 5).([]byte)
	if cap(v) != 5 {
		t.Errorf("cap %d, want 5", cap(v))
	}
}
