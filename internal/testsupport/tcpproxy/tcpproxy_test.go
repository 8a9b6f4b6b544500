package tcpproxy_test

import (
	"bufio"
	"net"
	"testing"

	"github.com/redrive/redrive/internal/testsupport/tcpproxy"
)

// An echo server behind the proxy: reachable up, unreachable down,
// reachable again after.
func TestProxyUpDownUp(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				line, err := bufio.NewReader(c).ReadString('\n')
				if err == nil {
					_, _ = c.Write([]byte(line))
				}
			}()
		}
	}()
	p := tcpproxy.New(t, ln.Addr().String())
	echo := func() error {
		c, err := net.Dial("tcp", p.Addr())
		if err != nil {
			return err
		}
		defer c.Close()
		if _, err := c.Write([]byte("ping\n")); err != nil {
			return err
		}
		_, err = bufio.NewReader(c).ReadString('\n')
		return err
	}
	if err := echo(); err != nil {
		t.Fatalf("up: %v", err)
	}
	p.SetUp(false)
	if err := echo(); err == nil {
		t.Fatal("down: the echo went through")
	}
	p.SetUp(true)
	if err := echo(); err != nil {
		t.Fatalf("up again: %v", err)
	}
}
