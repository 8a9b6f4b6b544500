package main

import (
	"github.com/redrive/redrive/internal/assembly"
	"github.com/redrive/redrive/internal/assembly/config"
)

// loadConfig loads and validates the configuration file named by --config,
// then checks the names its backend will declare (assembly.Check). Every
// problem with it (missing file, syntax, a bad field, a name the broker
// would refuse) is bad input: the error makes the command exit with status
// 2, one line per problem.
func (inv *invocation) loadConfig() (*config.Config, error) {
	c, err := config.Load(inv.configPath)
	if err != nil {
		return nil, badInput(err)
	}
	if err := assembly.Check(c); err != nil {
		return nil, badInput(err)
	}
	return c, nil
}
