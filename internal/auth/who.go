package auth

import (
	"os"
	"os/user"
)

// WhoAmI is $USER@hostname (the OS user when $USER is unset): who turned
// maintenance on or off, who broke a lease, who holds a deploy.
func WhoAmI() string {
	name := os.Getenv("USER")
	if u, err := user.Current(); err == nil && name == "" {
		name = u.Username
	}
	host, _ := os.Hostname()
	return name + "@" + host
}
