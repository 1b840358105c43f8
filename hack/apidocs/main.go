// Command apidocs writes the Markdown API reference (docs/api.md) from the Go types of an API
// package: the godoc of every kind, type and field, with what the kubebuilder markers add
// (required or optional, defaults, bounds, enum values, the messages of the CEL rules). It reads
// the sources with go/parser alone, so the reference says exactly what `kubectl explain` says.
// It is kept over elastic/crd-ref-docs (v0.3.0, compared on this API): that generator renders none
// of the CEL rules' messages, which say what admission refuses and why, and fills the table with
// marker residue ("Optional: {}" on 224 fields).
//
//	go run ./hack/apidocs -out docs/api.md ./api/v1alpha1
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
)

func main() {
	out := flag.String("out", "", "file to write (default: standard output)")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "Usage: apidocs [-out FILE] API_PACKAGE_DIR")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(flag.Arg(0), *out); err != nil {
		fmt.Fprintln(os.Stderr, "apidocs:", err)
		os.Exit(1)
	}
}

func run(dir, out string) error {
	doc, err := generate(dir)
	if err != nil {
		return err
	}
	if out == "" {
		_, err = os.Stdout.Write(doc)
		return err
	}
	return os.WriteFile(out, doc, 0o644)
}

// generate returns the reference of the API package in dir.
func generate(dir string) ([]byte, error) {
	a, err := parsePackage(dir)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := render(a, &buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
