// Command mythex makes deploys of HTTP services drop zero requests and catches
// new versions that crash right after they start. See README.md.
package main

import "os"

func main() {
	os.Exit(run(os.Args[1:]))
}
