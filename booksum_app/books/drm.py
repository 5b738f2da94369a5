"""DRM detection for epubs: refuse encrypted content with the scheme named, allow font obfuscation.

Refused (DRMProtectedError): META-INF/rights.xml (Adobe ADEPT), META-INF/sinf.xml
(Apple FairPlay), META-INF/license.lcpl (Readium LCP), and any META-INF/encryption.xml
entry that encrypts a content document (spine item, nav, NCX, or a file with a text
extension); the scheme is named from the key info when recognisable. Accepted: IDPF
(http://www.idpf.org/2008/embedding) and Adobe (http://ns.adobe.com/pdf/enc#RC) font
obfuscation of fonts, and encrypted images or fonts, which we never read.
"""

from __future__ import annotations

from lxml import etree

from booksum_app.books.archive import SafeZip, join_href
from booksum_app.books.markup import parse_xml
from booksum_app.errors import DRMProtectedError

ENC_NS = "http://www.w3.org/2001/04/xmlenc#"
FONT_OBFUSCATION = frozenset(
    {"http://www.idpf.org/2008/embedding", "http://ns.adobe.com/pdf/enc#RC"}
)
_CONTENT_EXT = (".xhtml", ".html", ".htm", ".xml", ".opf", ".ncx", ".txt")


def check_drm_markers(zf: SafeZip, *, name: str) -> None:
    """Refuse archives carrying an Adobe ADEPT, Apple FairPlay or Readium LCP rights file."""
    markers = {
        "META-INF/rights.xml": "Adobe ADEPT",
        "META-INF/sinf.xml": "Apple FairPlay",
        "META-INF/license.lcpl": "Readium LCP",
    }
    for member, scheme in markers.items():
        if zf.has(member):
            raise DRMProtectedError(
                f"{name}: DRM-protected ({scheme}, {member}); booksum cannot read encrypted "
                "books: use a DRM-free copy of this book"
            )


def check_encryption(zf: SafeZip, *, name: str, content_paths: set[str]) -> None:
    """Refuse when META-INF/encryption.xml encrypts a content document (fonts may be obfuscated)."""
    if not zf.has("META-INF/encryption.xml"):
        return
    root = parse_xml(zf.read("META-INF/encryption.xml"), name=f"{name}: META-INF/encryption.xml")
    for data in root.iter(f"{{{ENC_NS}}}EncryptedData"):
        method = data.find(f"{{{ENC_NS}}}EncryptionMethod")
        algorithm = method.get("Algorithm", "") if method is not None else ""
        ref = data.find(f".//{{{ENC_NS}}}CipherReference")
        uri, _ = join_href("", ref.get("URI", "")) if ref is not None else ("", "")
        is_content = uri in content_paths or uri.lower().endswith(_CONTENT_EXT)
        if algorithm in FONT_OBFUSCATION and not is_content:
            continue
        if not is_content:
            continue  # an encrypted image or font does not stop us reading the text
        key = etree.tostring(data).decode("utf-8", "replace")
        if "adobe.com/adept" in key:
            scheme = "Adobe ADEPT"
        elif "readium.org" in key:
            scheme = "Readium LCP"
        elif algorithm in FONT_OBFUSCATION:
            scheme = f"obfuscated content ({algorithm})"
        else:
            scheme = f"unknown scheme, algorithm {algorithm or '?'}"
        raise DRMProtectedError(
            f"{name}: DRM-protected ({scheme}; META-INF/encryption.xml encrypts {uri}); "
            "booksum cannot read encrypted books: use a DRM-free copy of this book"
        )
