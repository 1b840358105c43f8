package helm

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"helm.sh/helm/v4/pkg/action"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"sigs.k8s.io/yaml"
)

// Build says what a chart archive is built for.
type Build struct {
	// Version is the product's version, from the repository's VERSION file: "0.1.0".
	Version string
	// ImageTag is the tag the images were built with (make images VERSION=...): "v0.1.0" for a
	// release of Version, anything else ("dev") for a build between releases.
	ImageTag string
	// ModTime, when not zero, is every file's time in the archive, for the same bytes from the
	// same sources.
	ModTime time.Time
}

// ChartVersion is the chart's version for the build: Version for a release, whose images are
// tagged v<Version>; otherwise a pre-release of it named after the tag (0.1.0-dev), so that an
// archive between releases never takes a release's name.
func (b Build) ChartVersion() (string, error) {
	if b.ImageTag == "v"+b.Version {
		return b.Version, nil
	}
	if releaseTag.MatchString(b.ImageTag) {
		return "", fmt.Errorf("the images are tagged %s but VERSION says %s: a release changes VERSION first", b.ImageTag, b.Version)
	}
	return b.Version + "-" + strings.Trim(notInPrerelease.ReplaceAllString(b.ImageTag, "-"), "-"), nil
}

var (
	releaseTag      = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+$`)
	notInPrerelease = regexp.MustCompile(`[^0-9A-Za-z-.]+`)
)

// Package writes the chart of chartDir as outDir/<name>-<version>.tgz with Helm's package
// action, its version, appVersion and Artifact Hub image list set for the build, and returns the
// archive's path.
func Package(chartDir, outDir string, b Build) (string, error) {
	version, err := b.ChartVersion()
	if err != nil {
		return "", err
	}
	work, err := os.MkdirTemp("", "dbtune-chart-")
	if err != nil {
		return "", fmt.Errorf("failed to create a directory for the chart: %w", err)
	}
	defer os.RemoveAll(work)
	dir := filepath.Join(work, filepath.Base(chartDir))
	if err := os.CopyFS(dir, os.DirFS(chartDir)); err != nil {
		return "", fmt.Errorf("failed to copy the chart %s: %w", chartDir, err)
	}
	if err := stampMetadata(dir, version, b.ImageTag); err != nil {
		return "", err
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return "", fmt.Errorf("failed to create %s: %w", outDir, err)
	}
	p := action.NewPackage()
	p.Destination = outDir
	p.Version = version
	p.AppVersion = b.ImageTag
	if !b.ModTime.IsZero() {
		p.SourceDateEpoch = &b.ModTime
	}
	path, err := p.Run(dir, nil)
	if err != nil {
		return "", fmt.Errorf("failed to package the chart %s: %w", chartDir, err)
	}
	return path, nil
}

// stampMetadata rewrites the chart's Chart.yaml for the build: the package action would set the
// versions, but the Artifact Hub annotations name the images by tag and say whether this is a
// pre-release, and the action does not touch them.
func stampMetadata(dir, version, appVersion string) error {
	file := filepath.Join(dir, "Chart.yaml")
	raw, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("failed to read the chart's metadata: %w", err)
	}
	var meta chart.Metadata
	if err := yaml.UnmarshalStrict(raw, &meta); err != nil {
		return fmt.Errorf("failed to parse %s: %w", file, err)
	}
	images, err := imageAnnotation(dir, appVersion)
	if err != nil {
		return err
	}
	meta.Version, meta.AppVersion = version, appVersion
	meta.Annotations[AnnotationImages] = images
	meta.Annotations[AnnotationPrerelease] = strconv.FormatBool(strings.Contains(version, "-"))
	out, err := yaml.Marshal(&meta)
	if err != nil {
		return fmt.Errorf("failed to write the chart's metadata: %w", err)
	}
	return os.WriteFile(file, out, 0o644)
}

// Artifact Hub's annotations that depend on the build.
const (
	AnnotationImages     = "artifacthub.io/images"
	AnnotationPrerelease = "artifacthub.io/prerelease"
)

// imageAnnotation is the artifacthub.io/images list: the manager's and the node agent's
// repositories of the chart's values, with the tag the chart defaults them to.
func imageAnnotation(dir, tag string) (string, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "values.yaml"))
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("the chart %s has no values.yaml", dir)
	}
	if err != nil {
		return "", fmt.Errorf("failed to read the chart's values: %w", err)
	}
	var values struct {
		Manager   struct{ Image struct{ Repository string } }
		NodeAgent struct{ Image struct{ Repository string } }
	}
	if err := yaml.Unmarshal(raw, &values); err != nil {
		return "", fmt.Errorf("failed to parse the chart's values: %w", err)
	}
	return ImageList(values.Manager.Image.Repository, values.NodeAgent.Image.Repository, tag), nil
}

// ImageList is the artifacthub.io/images annotation for these repositories and tag.
func ImageList(manager, nodeAgent, tag string) string {
	return fmt.Sprintf("- name: manager\n  image: %s:%s\n- name: node-agent\n  image: %s:%s\n", manager, tag, nodeAgent, tag)
}
