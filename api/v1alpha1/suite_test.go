package v1alpha1_test

import (
	"os"
	"testing"

	"github.com/dbtune/scratch-operator/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, &env))
}
