package libmariadb

import "errors"

// ErrNotBuilt is the error of asking for this client in a build without the C client.
var ErrNotBuilt = errors.New("this tpcc was built without the libmariadb client (CGO_ENABLED=0 or -tags nolibmariadb): " +
	"install libmariadb-dev and rebuild (cd tpcc && go build -o bin/tpcc ./cmd/tpcc), or run with --client go")
