// Package mysql knows what the scratch-operator needs to know about MySQL-compatible servers:
// which flavor and version a container image runs, which option names that server reads,
// where its image looks for drop-in option files and keeps its data, and how to write the
// settings that point temporary files at a RAM volume while every directory that must survive
// a restart stays on the persistent data volume.
//
// Everything here is pure: no client, no file system. The injection logic calls Detect on the
// database container's image, builds a Layout, and renders it with RenderDropIn (a my.cnf
// drop-in for a ConfigMap) or Args (command-line flags).
package mysql
