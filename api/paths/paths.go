// Package paths holds the one path rule the operator, the node agent and their tests share:
// whether a path lies in a directory. The API's path fields (mountPath, the data directory,
// replicaLoadDir, configDir) are compared with it on the operator's side, mount points on the
// agent's side.
package paths

import "strings"

// Within reports whether the absolute path p is dir or lies below it, comparing whole path
// components: /var/lib/mysql-old is not within /var/lib/mysql. A trailing slash on dir is
// ignored, every absolute path is within "/", and nothing is within the empty string: an unknown
// directory holds nothing.
func Within(p, dir string) bool {
	if dir == "" {
		return false
	}
	dir = strings.TrimSuffix(dir, "/")
	return p == dir || strings.HasPrefix(p, dir+"/")
}
