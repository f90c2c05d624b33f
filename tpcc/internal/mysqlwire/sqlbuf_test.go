package mysqlwire

import "testing"

func TestFixed(t *testing.T) {
	cases := []struct {
		v     int64
		scale int
		s     string
	}{{12345, 2, "123.45"}, {5, 2, "0.05"}, {-1000, 2, "-10.00"}, {2000, 4, "0.2000"}, {0, 2, "0.00"}, {30000000, 2, "300000.00"}}
	for _, c := range cases {
		if got := string(AppendFixed(nil, c.v, c.scale)); got != c.s {
			t.Errorf("AppendFixed(%d,%d) = %q want %q", c.v, c.scale, got, c.s)
		}
		if got := ParseFixed([]byte(c.s), c.scale); got != c.v {
			t.Errorf("ParseFixed(%q) = %d want %d", c.s, got, c.v)
		}
	}
	if got := ParseFixed([]byte("7"), 2); got != 700 {
		t.Errorf("ParseFixed(7) = %d", got)
	}
}
