package server

import (
	"net"
)

// ServeTestBox serves the same paths on ln, a private listener operators keep off the
// public network (--test-box-listen), where the test-box token is admitted too. Connections
// there are not under the public listener's caps.
func (s *Server) ServeTestBox(ln net.Listener) error {
	return s.srv.Serve(testBoxListener{ln})
}

type testBoxListener struct{ net.Listener }

func (l testBoxListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return testBoxConn{c}, nil
}

// testBoxConn marks a connection of the test-box listener.
type testBoxConn struct{ net.Conn }

// TestBox marks the connection as the private test-box listener's (admit.TestBoxConn).
func (testBoxConn) TestBox() {}
