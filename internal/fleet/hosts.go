package fleet

// Host returns the host named name (hosts[].name), and false when the
// fleet has none by that name.
func (c *Config) Host(name string) (Host, bool) {
	for _, h := range c.Hosts {
		if h.Name == name {
			return h, true
		}
	}
	return Host{}, false
}

// HostNames lists hosts[].name in file order, for errors that name an
// unknown host.
func (c *Config) HostNames() []string {
	names := make([]string, 0, len(c.Hosts))
	for _, h := range c.Hosts {
		names = append(names, h.Name)
	}
	return names
}
