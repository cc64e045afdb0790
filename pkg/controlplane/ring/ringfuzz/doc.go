// Package ringfuzz holds the Go fuzz targets of pkg/controlplane/ring. They live in their
// own package because `go test -fuzz` instruments every package the test
// binary links, and pkg/controlplane/ring's own tests link an embedded etcd server:
// fuzzing there would rebuild etcd instrumented (minutes) on every cold
// cache. Seeds: testdata/fuzz/FuzzX/ (committed).
package ringfuzz
