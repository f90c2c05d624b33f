package run

import (
	"errors"
	"strings"
	"testing"

	"flushbench/tpcc/internal/libmariadb"
	"flushbench/tpcc/internal/mysqlwire"
)

// validOpts are options normalize accepts apart from the client choice.
func validOpts(mode Mode, client mysqlwire.Client, transport mysqlwire.Transport) Opts {
	return Opts{W: 1, Conns: 1, MeasureS: 1, IntervalS: 1, Mode: mode, Client: client, Transport: transport}
}

// The client a run gets by default is the Go client, in either mode and
// whether or not the build has the C client; its transport defaults by
// mode.
func TestDefaultClient(t *testing.T) {
	cases := []struct {
		name          string
		o             Opts
		wantClient    mysqlwire.Client
		wantTransport mysqlwire.Transport
	}{
		{"tpcc-mysql mode", validOpts("", "", ""), mysqlwire.ClientGo, mysqlwire.TransportBlocking},
		{"--transport netpoll", validOpts("", "", mysqlwire.TransportNetpoll), mysqlwire.ClientGo, mysqlwire.TransportNetpoll},
		{"--client go", validOpts("", mysqlwire.ClientGo, ""), mysqlwire.ClientGo, mysqlwire.TransportBlocking},
		{"batched mode", validOpts(ModeBatched, "", ""), mysqlwire.ClientGo, mysqlwire.TransportNetpoll},
		{"--client libmariadb", validOpts("", mysqlwire.ClientLibmariadb, ""), mysqlwire.ClientLibmariadb, ""},
	}
	for _, c := range cases {
		if c.wantClient == mysqlwire.ClientLibmariadb && !libmariadb.Available {
			continue // TestClientRefusals checks this build's refusal
		}
		if err := c.o.normalize(); err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if c.o.Client != c.wantClient || c.o.Transport != c.wantTransport {
			t.Errorf("%s: client %q transport %q, want %q %q", c.name, c.o.Client, c.o.Transport, c.wantClient, c.wantTransport)
		}
	}
}

func TestClientRefusals(t *testing.T) {
	cases := []struct {
		o    Opts
		want string
	}{
		{validOpts("", "odbc", ""), `--client must be libmariadb or go, not "odbc"`},
		{validOpts(ModeBatched, mysqlwire.ClientLibmariadb, ""), "--client libmariadb needs --mode tpcc-mysql"},
		{validOpts("", mysqlwire.ClientLibmariadb, mysqlwire.TransportBlocking), "--transport applies to --client go only"},
	}
	for _, c := range cases {
		if err := c.o.normalize(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.o, err, c.want)
		}
	}
	o := validOpts("", mysqlwire.ClientLibmariadb, "")
	err := o.normalize()
	if libmariadb.Available != (err == nil) || (err != nil && !errors.Is(err, libmariadb.ErrNotBuilt)) {
		t.Errorf("--client libmariadb in a build with Available=%v: %v", libmariadb.Available, err)
	}
}
