"""One truth format (``truth``), one scorer (``score``) and the accuracy tables (``accuracy``); the flow never imports it."""
