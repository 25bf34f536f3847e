"""Qt's side of the translations: trayvml's compiled catalog and Qt's own (standard buttons, dialogs).

The non-Qt layers translate through ``trayvml.i18n`` from the same catalog's source; both are set
to one language here, before any window or menu is made.
"""

from __future__ import annotations

import logging

from PySide6.QtCore import QCoreApplication, QLibraryInfo, QLocale, QTranslator

from trayvml.core import i18n

log = logging.getLogger(__name__)


def install_translators(app: QCoreApplication, language: str) -> list[QTranslator]:
    """Translate the app into ``language`` ("en" or one of i18n.LANGUAGES). Returns the translators
    installed, which must live as long as the app (Qt does not own them)."""
    locale = QLocale(language)
    # Numbers, dates and the decimal separator in Qt's widgets follow the language shown: the system's
    # own conventions where it speaks that language (en_GB, zh_SG), the language's where it does not.
    if QLocale.system().language() != locale.language():
        QLocale.setDefault(locale)
    installed: list[QTranslator] = []
    if language not in i18n.LANGUAGES:
        i18n.install(language)
        return installed
    qt_folder = QLibraryInfo.path(QLibraryInfo.LibraryPath.TranslationsPath)
    for name, folder in (("qtbase", qt_folder), ("trayvml", str(i18n.catalog_path(language).parent))):
        translator = QTranslator(app)
        if translator.load(locale, name, "_", folder):
            app.installTranslator(translator)
            installed.append(translator)
        else:  # the app still works, in English
            log.warning("No %s translation for %s in %s", name, language, folder)
    # The layers without Qt read the same catalog through Qt's translators (thread-safe), not the .ts.
    i18n.install(language, QCoreApplication.translate)
    return installed
