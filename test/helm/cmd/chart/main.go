// Command chart packages the Helm chart into a versioned archive (make chart):
//
//	go run ./cmd/chart -chart ../../config/helm/dbtune-scratch-operator -out ../../bin/chart \
//		-version 0.1.0 -image-tag dev
//
// It prints the archive's path.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/dbtune/scratch-operator/test/helm"
)

func main() {
	chartDir := flag.String("chart", "", "the chart's directory")
	out := flag.String("out", "bin/chart", "where to write the archive")
	version := flag.String("version", "", "the product's version (the VERSION file): the chart's version for a release")
	tag := flag.String("image-tag", "dev", "the tag the images are built with: the chart's appVersion")
	mtime := flag.Int64("mtime", 0, "when not 0, the archive's file times, in seconds since 1970 (the commit's time)")
	flag.Parse()
	b := helm.Build{Version: *version, ImageTag: *tag}
	if *mtime != 0 {
		b.ModTime = time.Unix(*mtime, 0).UTC()
	}
	path, err := run(*chartDir, *out, b)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chart:", err)
		os.Exit(1)
	}
	fmt.Println(path)
}

func run(chartDir, out string, b helm.Build) (string, error) {
	if chartDir == "" || b.Version == "" {
		return "", errors.New("-chart and -version are required")
	}
	dir, err := filepath.Abs(out)
	if err != nil {
		return "", err
	}
	return helm.Package(chartDir, dir, b)
}
