package config

// The configuration's broker key names a linked backend: the tests link
// the built-in ones, as every program that loads a configuration does
// (through internal/assembly).
import (
	_ "github.com/redrive/redrive/broker/kafka"
	_ "github.com/redrive/redrive/broker/rabbit"
)
