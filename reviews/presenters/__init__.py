"""View models for the review desk's pages: what a template renders, read and assembled outside the views."""
