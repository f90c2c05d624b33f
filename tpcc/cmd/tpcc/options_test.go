package main

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"flushbench/tpcc/internal/getopt"
	"flushbench/tpcc/internal/load"
	"flushbench/tpcc/internal/run"
)

// Every tpcc_start / tpcc_load option must work glued (-w10) and separate
// (-w 10), as getopt accepts them; flushbench's long options keep working.

type runParsed struct {
	o                         run.Opts
	mode, lateUnit, transport string
}

func parseRun(t *testing.T, args ...string) (runParsed, error) {
	t.Helper()
	var p runParsed
	s := runOptions(&p.o, &p.mode, &p.lateUnit, &p.transport)
	err := s.Parse(args)
	p.o.Seed = 0
	return p, err
}

func parseLoad(t *testing.T, args ...string) (load.Opts, error) {
	t.Helper()
	var o load.Opts
	s := loadOptions(&o)
	err := s.Parse(args)
	o.Seed, o.Workers = 0, 0
	return o, err
}

func TestRunOptionsBothForms(t *testing.T) {
	cases := []struct {
		opt, val string
		check    func(p runParsed) bool
	}{
		{"h", "10.0.0.5", func(p runParsed) bool { return p.o.Conn.Host == "10.0.0.5" }},
		{"P", "3307", func(p runParsed) bool { return p.o.Conn.Port == 3307 }},
		{"S", "/tmp/my.sock", func(p runParsed) bool { return p.o.Conn.Socket == "/tmp/my.sock" }},
		{"d", "tpcc10", func(p runParsed) bool { return p.o.Conn.DB == "tpcc10" }},
		{"u", "bench", func(p runParsed) bool { return p.o.Conn.User == "bench" }},
		{"p", "s3cret", func(p runParsed) bool { return p.o.Conn.Password == "s3cret" }},
		{"w", "10", func(p runParsed) bool { return p.o.W == 10 }},
		{"c", "16", func(p runParsed) bool { return p.o.Conns == 16 }},
		{"r", "30", func(p runParsed) bool { return p.o.RampupS == 30 }},
		{"l", "1800", func(p runParsed) bool { return p.o.MeasureS == 1800 }},
		{"i", "5", func(p runParsed) bool { return p.o.IntervalS == 5 }},
		{"f", "rt.txt", func(p runParsed) bool { return p.o.ReportFile == "rt.txt" }},
		{"t", "trx.txt", func(p runParsed) bool { return p.o.TrxFile == "trx.txt" }},
		{"m", "4", func(p runParsed) bool { return p.o.MultiSchema == 4 }},
		{"o", "2", func(p runParsed) bool { return p.o.SchemaOffset == 2 }},
		{"0", "50", func(p runParsed) bool { return p.o.LateMS[0] == 50 }},
		{"1", "51", func(p runParsed) bool { return p.o.LateMS[1] == 51 }},
		{"2", "52", func(p runParsed) bool { return p.o.LateMS[2] == 52 }},
		{"3", "800", func(p runParsed) bool { return p.o.LateMS[3] == 800 }},
		{"4", "200", func(p runParsed) bool { return p.o.LateMS[4] == 200 }},
	}
	for _, c := range cases {
		glued, err1 := parseRun(t, "-"+c.opt+c.val)
		separate, err2 := parseRun(t, "-"+c.opt, c.val)
		if err1 != nil || err2 != nil {
			t.Errorf("-%s: %v / %v", c.opt, err1, err2)
			continue
		}
		if !c.check(glued) || !c.check(separate) {
			t.Errorf("-%s %s not applied: glued %+v separate %+v", c.opt, c.val, glued.o, separate.o)
		}
		if !reflect.DeepEqual(glued, separate) {
			t.Errorf("-%s%s and -%s %s differ", c.opt, c.val, c.opt, c.val)
		}
	}
}

func TestLoadOptionsBothForms(t *testing.T) {
	cases := []struct {
		opt, val string
		check    func(o load.Opts) bool
	}{
		{"h", "db1", func(o load.Opts) bool { return o.Conn.Host == "db1" }},
		{"P", "3310", func(o load.Opts) bool { return o.Conn.Port == 3310 }},
		{"S", "/run/mysqld.sock", func(o load.Opts) bool { return o.Conn.Socket == "/run/mysqld.sock" }},
		{"d", "tpcc1000", func(o load.Opts) bool { return o.Conn.DB == "tpcc1000" }},
		{"u", "root", func(o load.Opts) bool { return o.Conn.User == "root" }},
		{"p", "pw", func(o load.Opts) bool { return o.Conn.Password == "pw" }},
		{"w", "1000", func(o load.Opts) bool { return o.W == 1000 }},
		{"l", "3", func(o load.Opts) bool { return o.Part == 3 }},
		{"m", "11", func(o load.Opts) bool { return o.MinW == 11 }},
		{"n", "20", func(o load.Opts) bool { return o.MaxW == 20 }},
	}
	for _, c := range cases {
		glued, err1 := parseLoad(t, "-"+c.opt+c.val)
		separate, err2 := parseLoad(t, "-"+c.opt, c.val)
		if err1 != nil || err2 != nil {
			t.Errorf("-%s: %v / %v", c.opt, err1, err2)
			continue
		}
		if !c.check(glued) || !c.check(separate) || !reflect.DeepEqual(glued, separate) {
			t.Errorf("-%s %s: glued %+v separate %+v", c.opt, c.val, glued, separate)
		}
	}
}

// The documented tpcc-mysql command lines parse as a whole.
func TestTpccMysqlCommandLines(t *testing.T) {
	o, err := parseLoad(t, "-h127.0.0.1", "-P3306", "-dtpcc10", "-uroot", "-p", "", "-w10")
	if err != nil || o.Conn.Host != "127.0.0.1" || o.Conn.Port != 3306 || o.Conn.DB != "tpcc10" ||
		o.Conn.User != "root" || o.Conn.Password != "" || o.W != 10 {
		t.Errorf("tpcc_load line: %+v %v", o, err)
	}
	p, err := parseRun(t, "-h127.0.0.1", "-P3306", "-dtpcc1000", "-uroot", "-w1000", "-c32", "-r10", "-l10800")
	if err != nil || p.o.W != 1000 || p.o.Conns != 32 || p.o.RampupS != 10 || p.o.MeasureS != 10800 {
		t.Errorf("tpcc_start line: %+v %v", p.o, err)
	}
	// getopt takes the next argument verbatim, even one starting with '-'.
	p, err = parseRun(t, "-p", "-w5", "-w", "3")
	if err != nil || p.o.Conn.Password != "-w5" || p.o.W != 3 {
		t.Errorf("-p -w5: %+v %v", p.o, err)
	}
}

func TestLongOptions(t *testing.T) {
	p, err := parseRun(t, "--json", "--mode", "batched", "--late-unit=s", "--seed", "7", "-json")
	if err != nil || !p.o.JSON || p.mode != "batched" || p.lateUnit != "s" {
		t.Errorf("long options: %+v %v", p, err)
	}
	p, err = parseRun(t, "--mode=tpcc-mysql")
	if err != nil || p.mode != "tpcc-mysql" {
		t.Errorf("--mode=: %+v %v", p, err)
	}
	if p, _ := parseRun(t); p.mode != string(run.ModeTpccMysql) {
		t.Errorf("default mode %q", p.mode)
	}
	var o load.Opts
	s := loadOptions(&o)
	if err := s.Parse([]string{"--workers", "3", "--drop", "-workers", "5"}); err != nil || o.Workers != 5 || !o.Drop {
		t.Errorf("load long options: %+v %v", o, err)
	}
}

func TestOptionErrors(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"-x"}, "unknown option -x"},
		{[]string{"-q5"}, "unknown option -q"},
		{[]string{"--bogus"}, "unknown option --bogus"},
		{[]string{"-w"}, "option -w needs a value"},
		{[]string{"-wten"}, `option -w: not a whole number: "ten"`},
		{[]string{"-c", "x"}, `option -c: not a whole number: "x"`},
		{[]string{"--mode"}, "option --mode needs a value"},
		{[]string{"stray"}, `unexpected argument "stray"`},
	}
	for _, c := range cases {
		_, err := parseRun(t, c.args...)
		var ue getopt.UsageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got %v, want usage error containing %q", c.args, err, c.want)
		}
	}
	for _, h := range []string{"-help", "--help"} {
		if _, err := parseRun(t, h); !errors.Is(err, getopt.ErrHelp) {
			t.Errorf("%s: %v", h, err)
		}
	}
	// Load has no -c: a clear error, not a silent default.
	if _, err := parseLoad(t, "-c4"); err == nil || !strings.Contains(err.Error(), "unknown option -c") {
		t.Errorf("load -c4: %v", err)
	}
}
