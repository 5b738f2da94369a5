"""Test doubles that ship with booksum: a fake OpenAI/Anthropic server, an in-process fake backend."""
