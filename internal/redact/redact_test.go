package redact

import "testing"

func TestURL(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{"amqp://guest:guest@127.0.0.1:5672/", "amqp://guest:***@127.0.0.1:5672/"},
		{"amqps://user:p%40ss%2Fword@rabbit.example:5671/vhost", "amqps://user:***@rabbit.example:5671/vhost"},
		{"amqp://user@h/", "amqp://user@h/"},
		{"amqp://h:5672/", "amqp://h:5672/"},
		{"postgres://u:pw@db:5432/redrive?sslmode=disable&password=other", "postgres://u:***@db:5432/redrive?sslmode=disable&password=***"},
		{"postgres://db/redrive?sslpassword=x", "postgres://db/redrive?sslpassword=***"},
		{"host=db user=u password=hunter2 dbname=d", "host=db user=u password=*** dbname=d"},
		{"host=db password='hunter 2' dbname=d", "host=db password=*** dbname=d"},
		{"amqp://u:pw@h:port/", "amqp://***"},
		{"amqp://u:p/w@h/", "amqp://***"},
		{"amqp://u:p#w@h/", "amqp://***"},
		// Whatever the value parses to: a password with "/", "?", "#" or
		// "@" moves the parser's host; a value that does not parse.
		{"amqp://guest:12/S3cr3t@host/", "amqp://***"},
		{"amqp://guest:ab?cd@host/", "amqp://***"},
		{"amqp://guest:p@ss@host/", "amqp://guest:***@host/"},
		{"amqp://guest:S3cr3t/host", "amqp://***"},
		{"postgres://u:p@h/db?application_name=a@b", "postgres://***"},
		{"postgres://h/db?password=ab@cd", "postgres://***"},
		{"postgres://h/db?x=1&password=a%26b&y=2#frag", "postgres://h/db?x=1&password=***"},
		{"postgres://h/db?password=a;b", "postgres://h/db?password=***"},
		{"postgres://h/db?password=ab&cdef=", "postgres://h/db?password=***"},
		{"postgres://h/db?password=#S3cr3t", "postgres://h/db?password=***"},
		{"postgres://h/db?PassWord=x", "postgres://h/db?PassWord=***"},
		{"postgres://h/db?sslmode=disable#top", "postgres://h/db?sslmode=disable#top"},
		{"postgres://h/db?%zz=1&password=x", "postgres://h/db?%zz=1&password=***"},
		{"A://h?/db?password=S3cr3t", "A://h?/db?password=***"},
		{"redis://:S3cr3t@h:6379/0", "redis://:***@h:6379/0"},
		{"S3cr3t@host://x", "***"},
		{"user:secret@kafka:9092", "***@kafka:9092"},
		{"kafka:9092", "kafka:9092"},
	}
	for _, tt := range tests {
		if got := URL(tt.in); got != tt.want {
			t.Errorf("URL(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
