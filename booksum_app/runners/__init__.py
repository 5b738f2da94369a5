"""runners."""
