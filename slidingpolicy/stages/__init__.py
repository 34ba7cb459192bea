"""The stages of a plan: admit decodes, order the queue, check violations, chunk, construct."""
