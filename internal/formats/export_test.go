package formats

// Len reports the entries of the two caches (for tests of their bounds).
func (c *ConnectSchemas) Len() (texts, writers int) { return c.byText.Len(), c.byKey.Len() }
