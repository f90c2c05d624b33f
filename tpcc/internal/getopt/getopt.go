// Package getopt parses command lines the way tpcc_load and tpcc_start do
// (POSIX getopt), plus flushbench's long options.
package getopt

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// Command-line options parsed the way tpcc_load and tpcc_start parse theirs
// (POSIX getopt): a one-letter option takes its value glued on (-w10) or
// as the next argument (-w 10, -p ""), and the next argument is taken
// verbatim even when it starts with '-'. flushbench's own options are long
// (--json, --workers 4, --mode=batched). For compatibility with earlier
// versions, which used Go's flag package, a single-dash argument that is
// exactly a long option's name (-json, -workers 4, -help) is that long
// option; this shadows getopt readings such as "-drop" = "-d rop".

// ErrHelp is returned by parse for -help / --help.
var ErrHelp = errors.New("help requested")

// UsageError is a command-line mistake (exit code 2).
type UsageError struct{ msg string }

func (e UsageError) Error() string { return e.msg }

// option is one declared option and whether it was given.
type option struct {
	short string // one character, or ""
	long  string // "", or the long name
	arg   bool   // takes a value
	help  string
	set   func(string) error
	seen  bool
}

// Set is one command's options.
type Set struct {
	Cmd  string // the command's name, for messages
	opts []*option
}

func (s *Set) add(short, long string, arg bool, help string, set func(string) error) {
	s.opts = append(s.opts, &option{short: short, long: long, arg: arg, help: help, set: set})
}

// Int declares an integer option (short and/or long name) stored in *p.
func (s *Set) Int(p *int, short, long string, def int, help string) {
	*p = def
	s.add(short, long, true, help, func(v string) error {
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("not a whole number: %q", v)
		}
		*p = n
		return nil
	})
}

// Uint declares a long option taking a non-negative integer.
func (s *Set) Uint(p *uint64, long string, def uint64, help string) {
	*p = def
	s.add("", long, true, help, func(v string) error {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return fmt.Errorf("not a non-negative whole number: %q", v)
		}
		*p = n
		return nil
	})
}

// Float declares a long option taking a finite number.
func (s *Set) Float(p *float64, long string, def float64, help string) {
	*p = def
	s.add("", long, true, help, func(v string) error {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return fmt.Errorf("not a number: %q", v)
		}
		*p = f
		return nil
	})
}

// String declares a string option (short and/or long name).
func (s *Set) String(p *string, short, long, def, help string) {
	*p = def
	s.add(short, long, true, help, func(v string) error { *p = v; return nil })
}

// Bool declares a long flag (--name, or --name=false).
func (s *Set) Bool(p *bool, long, help string) {
	s.add("", long, false, help, func(v string) error {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("not true or false: %q", v)
		}
		*p = b
		return nil
	})
}

func (s *Set) byShort(c string) *option {
	for _, o := range s.opts {
		if o.short == c {
			return o
		}
	}
	return nil
}

func (s *Set) byLong(name string) *option {
	for _, o := range s.opts {
		if o.long != "" && o.long == name {
			return o
		}
	}
	return nil
}

// Was reports whether the option with this short or long name was given.
func (s *Set) Was(name string) bool {
	for _, o := range s.opts {
		if (o.short == name || o.long == name) && o.seen {
			return true
		}
	}
	return false
}

func (o *option) name() string {
	if o.short != "" {
		return "-" + o.short
	}
	return "--" + o.long
}

// Parse applies args. It returns ErrHelp for -help/--help and a usageError
// for anything it cannot take.
func (s *Set) Parse(args []string) error {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			if i+1 < len(args) {
				return UsageError{fmt.Sprintf("unexpected argument %q", args[i+1])}
			}
			return nil
		}
		if len(a) < 2 || a[0] != '-' {
			return UsageError{fmt.Sprintf("unexpected argument %q (options start with -)", a)}
		}
		body := strings.TrimPrefix(a, "-")
		double := strings.HasPrefix(a, "--")
		if double {
			body = a[2:]
		}
		name, value, hasValue := strings.Cut(body, "=")
		if name == "help" || name == "h" && double {
			return ErrHelp
		}
		if o := s.byLong(name); o != nil && (double || len(name) > 1) {
			if o.arg && !hasValue {
				if i+1 >= len(args) {
					return UsageError{fmt.Sprintf("option --%s needs a value", name)}
				}
				i++
				value = args[i]
			} else if !o.arg && !hasValue {
				value = "true"
			}
			if err := o.apply(value); err != nil {
				return err
			}
			continue
		}
		if double {
			return UsageError{fmt.Sprintf("unknown option --%s (see tpcc %s --help)", name, s.Cmd)}
		}
		o := s.byShort(a[1:2])
		if o == nil {
			return UsageError{fmt.Sprintf("unknown option -%s (see tpcc %s --help)", a[1:2], s.Cmd)}
		}
		if !o.arg {
			return UsageError{fmt.Sprintf("option -%s takes no value", o.short)}
		}
		value = a[2:]
		if value == "" {
			if i+1 >= len(args) {
				return UsageError{fmt.Sprintf("option -%s needs a value", o.short)}
			}
			i++
			value = args[i]
		}
		if err := o.apply(value); err != nil {
			return err
		}
	}
	return nil
}

func (o *option) apply(v string) error {
	o.seen = true
	if err := o.set(v); err != nil {
		return UsageError{fmt.Sprintf("option %s: %v", o.name(), err)}
	}
	return nil
}

// Usage writes the option list.
func (s *Set) Usage(w io.Writer, synopsis string) {
	fmt.Fprintf(w, "usage: tpcc %s %s\n\noptions (-x10 and -x 10 both work):\n", s.Cmd, synopsis)
	for _, o := range s.opts {
		var names string
		switch {
		case o.short != "" && o.long != "":
			names = "-" + o.short + ", --" + o.long
		case o.short != "":
			names = "-" + o.short
		default:
			names = "--" + o.long
		}
		if o.arg {
			names += " V"
		}
		fmt.Fprintf(w, "  %-22s %s\n", names, o.help)
	}
}
