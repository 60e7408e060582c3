"""Documents a company writes its knowledge down in: Markdown, plain text, HTML and PDF, read
and split by their structure for the extraction of knowledge (:mod:`agents.learn.documents`).

::

    document = read_document(Path("handbook.md"))
    for section in document.sections:
        print(section.locator, section.kinds())  # "Glossary", ["text", "table"]

Reading and its refusals: :mod:`kb.documents.read`; the splitters: :mod:`kb.documents.markdown`
(Markdown and plain text), :mod:`kb.documents.html`, :mod:`kb.documents.pdf`.
"""

from kb.documents.model import Block, Document, DocumentError, Section
from kb.documents.read import KINDS, MAX_DOCUMENT_BYTES, read_document

__all__ = [
    "KINDS",
    "MAX_DOCUMENT_BYTES",
    "Block",
    "Document",
    "DocumentError",
    "Section",
    "read_document",
]
