"""``python -m resolvers > schema.graphql``: print the GraphQL schema (SDL) as committed."""

import sys

from resolvers.schema import sdl

sys.stdout.write(sdl())
