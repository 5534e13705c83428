"""Memory classes and the reference codecs whose error is known exactly."""
