package readaheadstatus

import "github.com/dbtune/scratch-operator/node-agent/readahead/readaheadtest"

// t0 is when the test policies were created.
var t0 = readaheadtest.PolicyTime
